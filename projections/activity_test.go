package projections_test

import (
	"crypto/rand"
	"encoding/json"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/events"
	"github.com/trellis/trellis/projections"
)

// activityFeed builds queue events for the Activity projection.
type activityFeed struct {
	t   *testing.T
	a   *projections.Activity
	seq uint64
}

func (f *activityFeed) apply(queue, id, typ string, at time.Time, payload any) {
	f.t.Helper()
	raw, err := json.Marshal(payload)
	if err != nil {
		f.t.Fatal(err)
	}
	f.seq++
	rec := events.Recorded{Envelope: events.Envelope{ID: events.NewID(at), Type: typ, AggregateID: id, Time: at, Schema: 1, Payload: raw},
		Stream: events.StreamQueue, Subject: "trellis.queue." + queue + "." + id + "." + typ, Seq: f.seq}
	if err := f.a.Apply(rec); err != nil {
		f.t.Fatal(err)
	}
}

// taskAt returns a task id whose ULID time is at (an add at that time).
func taskAt(at time.Time) string {
	return ulid.MustNew(ulid.Timestamp(at), rand.Reader).String()
}

func total(v []int) int {
	n := 0
	for _, x := range v {
		n += x
	}
	return n
}

// TestActivityWindow: events land in the bucket of their minute; a bucket
// whose minute left the window is reused for the new minute, cleared;
// events older than the window are not counted; a worker seen only
// before the window is dropped.
func TestActivityWindow(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 1, 12, 30, 20, 0, time.UTC)
	f := &activityFeed{t: t, a: projections.NewActivity(0)}
	old := now.Add(-90 * time.Minute) // before the window
	f.apply("q", taskAt(old), "added", old, map[string]any{"queue": "q"})
	f.apply("q", taskAt(old), "claimed", old, map[string]any{"worker": "gone", "attempt": 1})
	thirty := now.Add(-60 * time.Minute) // the same ring slot again, one window later
	f.apply("q", taskAt(thirty), "added", thirty, map[string]any{"queue": "q"})
	for i := range 3 {
		at := now.Add(-time.Duration(i) * time.Minute)
		f.apply("q", taskAt(at), "added", at, map[string]any{"queue": "q"})
	}
	// An event older than the minute its slot holds now is not counted.
	f.apply("q", taskAt(thirty), "added", thirty, map[string]any{"queue": "q"})

	s := f.a.Snapshot(now)
	if s.Buckets != trellis.ActivityBuckets || !s.Start.Equal(time.Date(2026, 3, 1, 11, 31, 0, 0, time.UTC)) || s.Seq != f.seq {
		t.Fatalf("window %s, %d buckets, seq %d", s.Start, s.Buckets, s.Seq)
	}
	added := s.Queues["q"].Events["added"]
	if total(added) != 3 || added[59] != 1 || added[58] != 1 || added[57] != 1 {
		t.Fatalf("added per bucket: %v", added)
	}
	if _, ok := s.Queues["q"].Events["claimed"]; ok {
		t.Errorf("the claim of 90 minutes ago is counted: %v", s.Queues["q"].Events)
	}
	if len(s.Workers) != 0 {
		t.Errorf("workers %+v; the only worker acted before the window", s.Workers)
	}
}

// TestActivityClaimLatency: a first claim is measured from the add (the
// task id's time), a claim after a retry from when the retry was due, a
// claim after a release from the release; percentiles are upper bounds of
// a bin at most 19 % above the value.
func TestActivityClaimLatency(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 1, 12, 0, 50, 0, time.UTC)
	f := &activityFeed{t: t, a: projections.NewActivity(0)}
	base := now.Add(-40 * time.Second)
	a := taskAt(base)
	f.apply("q", a, "added", base, map[string]any{"queue": "q"})
	f.apply("q", a, "claimed", base.Add(250*time.Millisecond), map[string]any{"worker": "w1", "attempt": 1})
	due := base.Add(10 * time.Second)
	f.apply("q", a, "attempt_failed", base.Add(time.Second), map[string]any{"worker": "w1", "attempt": 1, "retry_at": due})
	f.apply("q", a, "claimed", due.Add(2*time.Second), map[string]any{"worker": "w2", "attempt": 2})
	f.apply("q", a, "released", due.Add(3*time.Second), map[string]any{"worker": "w2"})
	f.apply("q", a, "claimed", due.Add(3*time.Second+40*time.Millisecond), map[string]any{"worker": "w3", "attempt": 2})
	// A second attempt whose dispatch the fold never saw has no latency.
	b := taskAt(base.Add(-3 * time.Hour))
	f.apply("q", b, "claimed", base, map[string]any{"worker": "w3", "attempt": 2})

	s := f.a.Snapshot(now).Queues["q"]
	if got := total(s.Claims); got != 3 {
		t.Fatalf("claims with a latency: %d, want 3 (%v)", got, s.Claims)
	}
	p50, p95 := s.ClaimP50Ms[59], s.ClaimP95Ms[59]
	if p50 == nil || p95 == nil {
		t.Fatalf("no percentiles: %v %v", p50, p95)
	}
	// Latencies 40 ms, 250 ms, 2000 ms: the median is 250 ms, the 95th
	// percentile 2000 ms.
	if *p50 < 250 || *p50 > 250*1.19 || *p95 < 2000 || *p95 > 2000*1.19 {
		t.Errorf("p50 %v ms, p95 %v ms; want about 250 and 2000", *p50, *p95)
	}
}

// TestActivityWorkers: each worker's events, finished attempts and rates,
// and what it did last; events without a worker or with a payload that
// does not decode are counted for the queue only.
func TestActivityWorkers(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 1, 12, 0, 30, 0, time.UTC)
	f := &activityFeed{t: t, a: projections.NewActivity(0)}
	var last string
	for i := range 10 {
		at := now.Add(-time.Duration(i) * 20 * time.Second)
		id := taskAt(at)
		f.apply("fast", id, "claimed", at, map[string]any{"worker": "w1", "attempt": 1})
		f.apply("fast", id, "completed", at.Add(time.Second), map[string]any{"worker": "w1"})
		if i == 0 {
			last = id
		}
	}
	early := now.Add(-50 * time.Minute)
	f.apply("slow", taskAt(early), "claimed", early, map[string]any{"worker": "w2", "attempt": 1})
	f.apply("slow", taskAt(early), "dead", early.Add(time.Minute), map[string]any{"worker": "w2"})
	f.apply("slow", taskAt(now), "claimed", now, "not an object")

	act := f.a.Snapshot(now)
	if len(act.Workers) != 2 {
		t.Fatalf("workers %+v", act.Workers)
	}
	w1, w2 := act.Workers[0], act.Workers[1]
	if w1.Worker != "w1" || w1.Finished != 10 || w1.Events["claimed"] != 10 || w1.Events["completed"] != 10 ||
		w1.PerMinuteRecent != 2 || w1.PerMinute != 0.17 || w1.LastEvent != "completed" || w1.LastTask != last || len(w1.Queues) != 1 {
		t.Errorf("w1 = %+v", w1)
	}
	if w2.Worker != "w2" || w2.Finished != 1 || w2.PerMinuteRecent != 0 || w2.LastEvent != "dead" || w2.Queues[0] != "slow" {
		t.Errorf("w2 = %+v", w2)
	}
	if got := total(act.Queues["slow"].Events["claimed"]); got != 2 {
		t.Errorf("slow claims %d, want 2 (one without a decodable payload)", got)
	}
}

// TestActivityCountsACarriedClaim: a completion carrying its claim (a
// pool's quick task, one event) counts a claim at the claim's own time,
// with its latency from the add, and a completion, both by the worker.
func TestActivityCountsACarriedClaim(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 1, 12, 0, 50, 0, time.UTC)
	f := &activityFeed{t: t, a: projections.NewActivity(0)}
	base := now.Add(-30 * time.Second)
	id := taskAt(base)
	f.apply("q", id, "added", base, map[string]any{"queue": "q"})
	claimedAt := base.Add(300 * time.Millisecond)
	f.apply("q", id, "completed", base.Add(time.Second), map[string]any{"worker": "w1", "what_was_done": "ok",
		"claim": map[string]any{"worker": "w1", "attempt": 1, "leased": true, "at": claimedAt}})
	s := f.a.Snapshot(now)
	q := s.Queues["q"]
	if total(q.Events["claimed"]) != 1 || total(q.Events["completed"]) != 1 || total(q.Claims) != 1 {
		t.Fatalf("events %v, claims with a latency %v; want one claim and one completion", q.Events, q.Claims)
	}
	if p50 := q.ClaimP50Ms[59]; p50 == nil || *p50 < 300 || *p50 > 300*1.19 {
		t.Fatalf("claim latency p50 %v ms; want about 300 (from the add to the claim's own time)", p50)
	}
	if len(s.Workers) != 1 || s.Workers[0].Worker != "w1" {
		t.Fatalf("workers %+v", s.Workers)
	}
}
