package trellis

import (
	"context"
	"time"
)

// The queue activity window: what the dashboard's charts and worker rates
// cover. Part of the contract (README, HTTP API).
const (
	// ActivityWindow is how far back QueueActivity looks.
	ActivityWindow = time.Hour
	// ActivityBucket is the resolution of its series.
	ActivityBucket = time.Minute
	// ActivityBuckets is the number of buckets in a series.
	ActivityBuckets = int(ActivityWindow / ActivityBucket)
	// MaxLeaseHolders bounds the claimed tasks WorkersView lists.
	MaxLeaseHolders = 1000
)

// QueueActivity is what the task queue did over the last ActivityWindow,
// per ActivityBucket, derived from the log alone: events counted by type
// (the time of each bucket is the event's own time), claim latency, and
// what each worker did.
type QueueActivity struct {
	// Start is the start of the first bucket; bucket i covers
	// [Start + i*BucketSeconds, Start + (i+1)*BucketSeconds).
	Start time.Time `json:"start"`
	// BucketSeconds is the width of a bucket.
	BucketSeconds int `json:"bucket_seconds"`
	// Buckets is the number of buckets of every series.
	Buckets int `json:"buckets"`
	// Seq is the last sequence of the queue stream folded in.
	Seq uint64 `json:"seq"`
	// FromSeq is the first sequence the window's fold read: the first
	// event stored within the window when the server began watching.
	FromSeq uint64 `json:"from_seq"`
	// CaughtUp is false while the fold is still reading the events the
	// stream held when the request came (a long window on a busy log).
	CaughtUp bool `json:"caught_up"`
	// Queues holds one series per queue that had events in the window.
	Queues map[string]*QueueSeries `json:"queues"`
	// Workers lists every worker that caused an event in the window.
	Workers []WorkerActivity `json:"workers"`
}

// QueueSeries is one queue's activity, bucket by bucket.
type QueueSeries struct {
	// Events counts the queue's task events per bucket, by event type
	// (added, claimed, completed, failed, attempt_failed, dead,
	// lease_expired, released, requeued, and any other type the log holds).
	Events map[string][]int `json:"events"`
	// Claims is the number of claims whose latency is known, per bucket.
	Claims []int `json:"claims"`
	// ClaimP50Ms and ClaimP95Ms are the median and 95th percentile of the
	// claim latency per bucket, in milliseconds (null without claims):
	// from the task becoming claimable (added, a retry due, released,
	// requeued, a lease expired) to its claim. Values are the upper bound of
	// a logarithmic histogram bin (at most 19 % above the true value).
	ClaimP50Ms []*float64 `json:"claim_p50_ms"`
	ClaimP95Ms []*float64 `json:"claim_p95_ms"`
}

// WorkerActivity is what one worker did in the window, from the events
// that name it (claims, finishes, failures, releases, lease expiries).
type WorkerActivity struct {
	Worker string `json:"worker"`
	// Queues are the queues it had events in.
	Queues []string `json:"queues"`
	// Events counts its events in the window by type.
	Events map[string]int `json:"events"`
	// Finished counts the attempts it ended in the window (completed,
	// failed, attempt_failed, dead).
	Finished int `json:"finished"`
	// PerMinute is Finished per minute over the whole window;
	// PerMinuteRecent the same over the last five minutes.
	PerMinute       float64 `json:"per_minute"`
	PerMinuteRecent float64 `json:"per_minute_recent"`
	// LastSeen is the time of its latest event, LastEvent that event's
	// type and LastTask its task.
	LastSeen  time.Time `json:"last_seen"`
	LastEvent string    `json:"last_event"`
	LastTask  string    `json:"last_task"`
	// Held lists the tasks it holds now (filled by WorkersView).
	Held []LeaseHolder `json:"held,omitempty"`
}

// LeaseHolder is a claimed task and what the log says about its claim.
type LeaseHolder struct {
	TaskID    string     `json:"task_id"`
	Queue     string     `json:"queue"`
	Worker    string     `json:"worker"`
	Objective string     `json:"objective"`
	ClaimedAt *time.Time `json:"claimed_at,omitempty"`
	Attempt   int        `json:"attempt"`
	// Leased is true for a claim held under a lease: a worker pool's
	// (the queue's lease, heartbeated through its dispatch) or an agent's
	// (queue next: its own lease, until ExpiresAt unless it heartbeats).
	Leased bool `json:"leased"`
	// ExpiresAt is when an agent's claim's lease ends.
	ExpiresAt *time.Time `json:"expires_at,omitempty"`
	// DispatchSeq and Delivery identify the dispatch message a pool holds.
	DispatchSeq uint64 `json:"dispatch_seq,omitempty"`
	Delivery    uint64 `json:"delivery,omitempty"`
	// LeaseSeconds is the claim's lease: an agent's own, else the
	// queue's (0: the default).
	LeaseSeconds float64 `json:"lease_seconds,omitempty"`
}

// WorkersView answers "who holds what, and how fast does each worker go":
// the claimed tasks from the queue board, the rates from QueueActivity.
type WorkersView struct {
	// Workers lists every worker holding a task or active in the window,
	// by name.
	Workers []WorkerActivity `json:"workers"`
	// Holders counts the claimed tasks listed; Truncated is true when the
	// board held more than MaxLeaseHolders claimed tasks.
	Holders   int  `json:"holders"`
	Truncated bool `json:"truncated"`
	// Start is the start of the activity window.
	Start time.Time `json:"start"`
	// NotDerived names what the log cannot tell and the view therefore
	// does not show.
	NotDerived []string `json:"not_derived"`
}

// ActivityReader answers the dashboard's queue charts and worker list,
// derived from the log.
type ActivityReader interface {
	// Activity returns what the queue did over the last ActivityWindow.
	Activity(ctx context.Context) (*QueueActivity, error)
	// Workers returns the workers seen over the window and the claims
	// they hold.
	Workers(ctx context.Context) (*WorkersView, error)
}
