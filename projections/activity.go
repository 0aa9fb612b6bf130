package projections

import (
	"encoding/json"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/events"
	"github.com/trellis/trellis/taskqueue"
)

// activityDispatchCap bounds the claimable-since times Activity keeps for
// claim latency (tasks made claimable by a retry, release, requeue, lease
// expiry, due delay or met prerequisites and not claimed yet); an add
// needs none (a task id is a ULID: it carries the add time).
const activityDispatchCap = 100_000

// latencyBins is the size of the claim-latency histogram: four bins per
// doubling from 1 ms (bin i holds latencies up to 2^(i/4) ms), up to
// 2^31 ms (about 25 days); longer latencies go to the last bin.
const latencyBins = 125

// Activity is the queue's recent activity, folded from the log: events per
// minute by queue and type, claim-latency histograms, and per-worker event
// counts, for the last trellis.ActivityWindow. It is not persisted: it
// starts from the first event stored within the window when it is created,
// and keeps going with the log. Memory is bounded by the window (one ring
// of buckets per queue and per worker seen in it) and by
// activityDispatchCap.
type Activity struct {
	start uint64

	mu         sync.Mutex
	seq        uint64
	queues     map[string]*activityRing
	workers    map[string]*workerRing
	dispatched map[string]time.Time
}

// activityRing is a ring of per-minute buckets.
type activityRing struct {
	minute [trellis.ActivityBuckets]int64 // the minute (unix/60) a slot holds
	counts [trellis.ActivityBuckets]map[string]int
	hist   [trellis.ActivityBuckets]*[latencyBins]uint32
}

// workerRing is a worker's ring plus what it did last.
type workerRing struct {
	activityRing
	queues    map[string]bool
	lastSeen  time.Time
	lastEvent string
	lastTask  string
}

// NewActivity returns the projection; it folds events after sequence
// start (the last sequence stored before the window).
func NewActivity(start uint64) *Activity {
	return &Activity{start: start, seq: start, queues: map[string]*activityRing{}, workers: map[string]*workerRing{},
		dispatched: map[string]time.Time{}}
}

// Name implements Projection.
func (a *Activity) Name() string { return "activity" }

// Stream implements Projection.
func (a *Activity) Stream() string { return events.StreamQueue }

// Load implements Projection: the fold starts at the window.
func (a *Activity) Load() (uint64, error) { return a.start, nil }

// Save implements Projection (nothing is persisted).
func (a *Activity) Save(uint64) error { return nil }

// Reset implements Projection.
func (a *Activity) Reset() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.queues, a.workers, a.dispatched = map[string]*activityRing{}, map[string]*workerRing{}, map[string]time.Time{}
	return nil
}

// activityPayload is what Activity reads of a queue event's payload.
type activityPayload struct {
	Worker  string     `json:"worker"`
	Attempt int        `json:"attempt"`
	RetryAt *time.Time `json:"retry_at"`
}

// Apply implements Projection.
func (a *Activity) Apply(rec events.Recorded) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.seq = rec.Seq
	if !taskqueue.IsTaskSubject(rec.Subject) || rec.Type == "" || trellis.ValidateTaskID("task_id", rec.AggregateID) != nil {
		return nil // controls, timers and anything that is not a task event
	}
	// A claim carried by its outcome (a pool's quick task) counts as a
	// claim of its own, at its own time.
	for _, step := range taskqueue.ExpandClaims([]events.Recorded{rec}) {
		a.apply(step)
	}
	return nil
}

// apply folds one step of a task's history (a.mu held).
func (a *Activity) apply(rec events.Recorded) {
	queue := queueOf(rec.Subject)
	var p activityPayload
	if len(rec.Payload) > 0 && rec.Payload[0] == '{' {
		_ = json.Unmarshal(rec.Payload, &p) // a payload that does not decode counts without a worker
	}
	minute := rec.Time.Unix() / 60
	q := a.queues[queue]
	if q == nil {
		q = &activityRing{}
		a.queues[queue] = q
	}
	slot := q.slot(minute)
	if slot >= 0 {
		q.counts[slot][rec.Type]++
	}
	id := rec.AggregateID
	switch rec.Type {
	case taskqueue.Claimed:
		at, ok := a.dispatched[id]
		delete(a.dispatched, id)
		if !ok && p.Attempt <= 1 {
			if u, err := ulid.ParseStrict(id); err == nil {
				at, ok = ulid.Time(u.Time()), true // the add: the id's time
			}
		}
		if ok && slot >= 0 {
			if q.hist[slot] == nil {
				q.hist[slot] = new([latencyBins]uint32)
			}
			q.hist[slot][latencyBin(rec.Time.Sub(at))]++
		}
	case taskqueue.Completed, taskqueue.Failed, taskqueue.Dead, taskqueue.Cancelled:
		delete(a.dispatched, id)
	default:
		// Claimable again (a retry, release, requeue, expired lease), or
		// for the first time later than its add (a delayed task due, a
		// waiting task ready).
		if (taskqueue.IsDispatch(rec.Type) && rec.Type != taskqueue.Added) || rec.Type == taskqueue.LeaseExpired {
			at := rec.Time
			if p.RetryAt != nil {
				at = *p.RetryAt
			}
			if _, ok := a.dispatched[id]; ok || len(a.dispatched) < activityDispatchCap {
				a.dispatched[id] = at
			}
		}
	}
	worker := p.Worker
	if worker == "" || rec.Type == taskqueue.Added {
		return
	}
	w := a.workers[worker]
	if w == nil {
		w = &workerRing{queues: map[string]bool{}}
		a.workers[worker] = w
	}
	w.queues[queue] = true
	if ws := w.slot(minute); ws >= 0 {
		w.counts[ws][rec.Type]++
	}
	if !rec.Time.Before(w.lastSeen) {
		w.lastSeen, w.lastEvent, w.lastTask = rec.Time, rec.Type, id
	}
}

// slot returns the ring slot of minute, clearing it when it held an older
// minute, or -1 when the slot already holds a newer minute (the event is
// older than the window).
func (r *activityRing) slot(minute int64) int {
	i := int(((minute % int64(trellis.ActivityBuckets)) + int64(trellis.ActivityBuckets)) % int64(trellis.ActivityBuckets))
	switch {
	case r.minute[i] == minute:
	case r.minute[i] < minute:
		r.minute[i] = minute
		r.counts[i] = map[string]int{}
		r.hist[i] = nil
	default:
		return -1
	}
	if r.counts[i] == nil {
		r.counts[i] = map[string]int{}
	}
	return i
}

// latencyBin is the histogram bin of d.
func latencyBin(d time.Duration) int {
	ms := float64(d) / float64(time.Millisecond)
	if ms <= 1 {
		return 0
	}
	b := int(math.Ceil(4 * math.Log2(ms)))
	return min(max(b, 0), latencyBins-1)
}

// binUpperMs is the upper bound of bin b in milliseconds.
func binUpperMs(b int) float64 {
	return math.Round(math.Pow(2, float64(b)/4)*100) / 100
}

// percentile returns the upper bound of the bin holding the p-quantile of
// the histogram, or nil when it is empty.
func percentile(h *[latencyBins]uint32, p float64) *float64 {
	if h == nil {
		return nil
	}
	var total uint64
	for _, n := range h {
		total += uint64(n)
	}
	if total == 0 {
		return nil
	}
	rank := uint64(math.Ceil(p * float64(total)))
	var seen uint64
	for b, n := range h {
		seen += uint64(n)
		if seen >= rank {
			v := binUpperMs(b)
			return &v
		}
	}
	v := binUpperMs(latencyBins - 1)
	return &v
}

// Snapshot returns the activity of the window ending with the minute of
// now. Workers whose last event is older than the window are dropped.
func (a *Activity) Snapshot(now time.Time) *trellis.QueueActivity {
	a.mu.Lock()
	defer a.mu.Unlock()
	n := trellis.ActivityBuckets
	last := now.Unix() / 60
	first := last - int64(n) + 1
	out := &trellis.QueueActivity{
		Start: time.Unix(first*60, 0).UTC(), BucketSeconds: int(trellis.ActivityBucket / time.Second), Buckets: n,
		Seq: a.seq, FromSeq: a.start + 1, CaughtUp: true,
		Queues: map[string]*trellis.QueueSeries{}, Workers: []trellis.WorkerActivity{},
	}
	for name, q := range a.queues {
		s := &trellis.QueueSeries{Events: map[string][]int{}, Claims: make([]int, n),
			ClaimP50Ms: make([]*float64, n), ClaimP95Ms: make([]*float64, n)}
		seen := false
		for i := range n {
			slot := q.at(first + int64(i))
			if slot < 0 {
				continue
			}
			for typ, c := range q.counts[slot] {
				if s.Events[typ] == nil {
					s.Events[typ] = make([]int, n)
				}
				s.Events[typ][i] = c
				seen = true
			}
			if h := q.hist[slot]; h != nil {
				for _, c := range h {
					s.Claims[i] += int(c)
				}
				s.ClaimP50Ms[i], s.ClaimP95Ms[i] = percentile(h, 0.5), percentile(h, 0.95)
			}
		}
		if seen {
			out.Queues[name] = s
		}
	}
	windowStart := time.Unix(first*60, 0)
	for name, w := range a.workers {
		if w.lastSeen.Before(windowStart) {
			delete(a.workers, name)
			continue
		}
		wa := trellis.WorkerActivity{Worker: name, Events: map[string]int{}, LastSeen: w.lastSeen.UTC(), LastEvent: w.lastEvent, LastTask: w.lastTask}
		recent := 0
		for i := range n {
			slot := w.at(first + int64(i))
			if slot < 0 {
				continue
			}
			for typ, c := range w.counts[slot] {
				wa.Events[typ] += c
				if finishes(typ) {
					wa.Finished += c
					if i >= n-5 {
						recent += c
					}
				}
			}
		}
		for q := range w.queues {
			wa.Queues = append(wa.Queues, q)
		}
		slices.Sort(wa.Queues)
		wa.PerMinute = math.Round(float64(wa.Finished)/float64(n)*100) / 100
		wa.PerMinuteRecent = math.Round(float64(recent)/5*100) / 100
		out.Workers = append(out.Workers, wa)
	}
	slices.SortFunc(out.Workers, func(x, y trellis.WorkerActivity) int { return strings.Compare(x.Worker, y.Worker) })
	return out
}

// at returns the slot holding minute, or -1.
func (r *activityRing) at(minute int64) int {
	i := int(((minute % int64(trellis.ActivityBuckets)) + int64(trellis.ActivityBuckets)) % int64(trellis.ActivityBuckets))
	if r.minute[i] != minute || r.counts[i] == nil {
		return -1
	}
	return i
}

// finishes reports whether an event of type typ ends an attempt.
func finishes(typ string) bool {
	switch typ {
	case taskqueue.Completed, taskqueue.Failed, taskqueue.AttemptFailed, taskqueue.Dead:
		return true
	}
	return false
}
