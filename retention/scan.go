package retention

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/events"
	"github.com/trellis/trellis/taskqueue"
)

// candidate is one task as the scan saw it.
type candidate struct {
	id, queue string
	task      *trellis.Task
	msgs      []events.Message // its events, in stream order
	lastSeq   uint64
	lastHash  string
	stored    time.Time // when its last event was stored
	// timers are the sequences of its fired timers (deleted by the server
	// when they fired), each right after the event of its batch.
	timers []uint64
	// holes are the deleted sequence ranges right after its events.
	holes [][2]uint64
	// keep is why it must stay ("" when it may be pruned).
	keep string
}

// scanResult is what one walk of the queue stream found.
type scanResult struct {
	tasks    map[string]*candidate
	order    []string // task ids by first sequence
	firstSeq uint64
	lastSeq  uint64
}

// scanQueue walks the queue stream up to its last sequence and folds every
// task, noting what prevents pruning it. pruned are the sequences earlier
// prunes removed (a hole they account for is not a deletion).
func scanQueue(ctx context.Context, store *events.Store, pruned *events.SeqRanges) (*scanResult, error) {
	info, err := store.StreamInfo(ctx, events.StreamQueue)
	if err != nil {
		return nil, fmt.Errorf("read the queue stream: %w", err)
	}
	res := &scanResult{tasks: map[string]*candidate{}, firstSeq: info.State.FirstSeq, lastSeq: info.State.LastSeq}
	if res.lastSeq == 0 {
		return res, nil
	}
	pendingTimer := map[string]bool{}
	var prev *candidate // owner of the message stored last
	var prevSeq uint64
	err = store.Scan(ctx, events.StreamQueue, events.ScanRange{To: res.lastSeq}, func(m events.Message) error {
		if prev != nil && m.Seq > prevSeq+1 {
			// A hole after one of prev's events: it must be one of prev's
			// own fired timers or a sequence an earlier prune removed,
			// else pruning prev would leave the hole unexplained (verify
			// tells a fired timer by the batch stored just before it).
			prev.holes = append(prev.holes, [2]uint64{prevSeq + 1, m.Seq - 1})
		}
		prev, prevSeq = nil, m.Seq
		if id, ok := timerTask(m.Subject); ok {
			pendingTimer[id] = true // a timer still waiting to fire
			return nil
		}
		if !taskqueue.IsTaskSubject(m.Subject) {
			return nil
		}
		id, queue := taskOf(m.Subject)
		c := res.tasks[id]
		if c == nil {
			c = &candidate{id: id, queue: queue}
			res.tasks[id] = c
			res.order = append(res.order, id)
		}
		prev = c
		c.msgs = append(c.msgs, m)
		c.lastSeq, c.stored = m.Seq, m.Stored
		c.lastHash = events.Hash(m.Envelope)
		if m.Bad != nil {
			c.keep = "an event of it cannot be read: " + m.Bad.Error()
			return nil
		}
		if c.keep != "" {
			return nil
		}
		next, err := taskqueue.Apply(c.task, m.Recorded)
		if err != nil {
			c.keep = "an event of it does not fold: " + err.Error()
			return nil
		}
		c.task = next
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("scan the queue stream: %w", err)
	}
	if prev != nil && prevSeq < res.lastSeq {
		prev.holes = append(prev.holes, [2]uint64{prevSeq + 1, res.lastSeq})
	}
	for _, c := range res.tasks {
		if pendingTimer[c.id] && c.keep == "" {
			c.keep = "a timer of it has not fired yet"
		}
		if c.keep == "" {
			c.findTimers(pruned)
		}
	}
	return res, nil
}

// findTimers finds the sequences of the task's fired timers and checks
// that every hole after its events is one of them or was pruned before.
func (c *candidate) findTimers(pruned *events.SeqRanges) {
	own := &events.SeqRanges{}
	for _, m := range c.msgs {
		if m.Scheduler == "" {
			continue
		}
		// The timer was stored in the batch of one of the task's own
		// events, right after it.
		var decider *events.Message
		for i := range c.msgs {
			d := &c.msgs[i]
			if d.Scheduler == "" && d.BatchID != "" && d.BatchID == m.BatchID && d.BatchSeq < m.BatchSeq {
				decider = d
			}
		}
		if decider == nil || m.BatchSeq != decider.BatchSeq+1 {
			c.keep = "its timer was not stored right after an event of its own"
			return
		}
		c.timers = append(c.timers, decider.Seq+1)
		own.Add(decider.Seq+1, decider.Seq+1)
	}
	for _, h := range c.holes {
		for _, r := range own.Minus(h[0], h[1]) {
			if !pruned.Covers(r[0], r[1]) {
				c.keep = "a deleted sequence after an event of it is neither a timer of it nor pruned"
				return
			}
		}
	}
}

// choose returns the tasks a prune at cut removes, in stream order, and
// counts the others by why they stay. awaited are the tasks open
// workflow runs added and wait for (a run reads an awaited task's end
// when it resumes, which may be long after the task finished).
func (r *scanResult) choose(cut time.Time, awaited map[string]bool) ([]*candidate, map[string]int) {
	kept := map[string]int{}
	// A finished task an open task still waits for stays (its end is
	// what the waiting task's release reads).
	waitedFor := map[string]bool{}
	for _, c := range r.tasks {
		if c.task != nil && !taskqueue.IsFinished(c.task.Status) {
			for _, id := range c.task.WaitingFor {
				waitedFor[id] = true
			}
		}
	}
	var out []*candidate
	for _, id := range r.order {
		c := r.tasks[id]
		switch {
		case c.task == nil:
			kept["pruned already"]++
		case !taskqueue.IsFinished(c.task.Status):
			kept["open"]++
		case !c.stored.Before(cut):
			kept["finished after the cut"]++
		case c.keep != "":
			kept[c.keep]++
		case waitedFor[id]:
			kept["an open task waits for it"]++
		case awaited[id]:
			kept["an open workflow run waits for it"]++
		default:
			out = append(out, c)
		}
	}
	return out, kept
}

// timerTask returns the task id of a task timer's subject
// (trellis.queue.<queue>._timer.task.<id>).
func timerTask(subject string) (string, bool) {
	t := strings.Split(subject, ".")
	if len(t) == 6 && t[0] == "trellis" && t[1] == "queue" && t[3] == "_timer" && t[4] == "task" {
		return t[5], true
	}
	return "", false
}

// taskOf returns the task id and queue of a task subject.
func taskOf(subject string) (id, queue string) {
	t := strings.SplitN(subject, ".", 6)
	return t[3], t[2]
}
