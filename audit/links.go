package audit

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/trellis/trellis/events"
	"github.com/trellis/trellis/taskqueue"
)

// What every stored message must show besides its chain link: the message
// id Trellis stored it under, an id that is a ULID made when the event
// says it was decided, and a stored time close to that. Timers are the
// one kind of message outside the chain: see timerLedger.

// MaxClockSkew is how far before its event's time a message may be stored
// (clocks of servers differ), and how far the ULID's time may be from the
// event's time.
const MaxClockSkew = time.Minute

// MaxAppendDelay is how long after its event's time a message may be
// stored (an append retried, a slow cluster). A message the server
// published from a timer may be stored any time after its time (the timer
// fires late when the server was down).
const MaxAppendDelay = 10 * time.Minute

// meta is what a stored message carries besides its envelope.
type meta struct {
	MsgID     string
	Scheduler string
	BatchID   string
	BatchSeq  uint64
	Stored    time.Time
}

// timerKinds are the kinds of timer subject (trellis.queue.<queue>._timer.<kind>.<id>).
const (
	timerTask     = "task"
	timerSchedule = "schedule"
)

// isTimerSubject reports whether subject is a timer's (a message schedule
// stored on the queue stream until it fires).
func isTimerSubject(subject string) bool {
	t := strings.Split(subject, ".")
	return len(t) == 6 && t[0] == "trellis" && t[1] == "queue" && t[3] == "_timer" && (t[4] == timerTask || t[4] == timerSchedule) && t[5] != "" && t[2] != ""
}

// timerTarget reports whether the message on subject may be what the
// timer on scheduler published: a task's due event, a schedule's tick.
func timerTarget(scheduler, subject, typ string) bool {
	s := strings.Split(scheduler, ".")
	if !isTimerSubject(scheduler) {
		return false
	}
	t := strings.Split(subject, ".")
	if len(t) < 5 || t[2] != s[2] {
		return false
	}
	switch s[4] {
	case timerTask:
		return typ == taskqueue.Due && t[3] == s[5] && t[4] == taskqueue.Due
	case timerSchedule:
		return typ == taskqueue.Tick && len(t) == 6 && t[3] == "_schedule" && t[4] == s[5] && t[5] == taskqueue.Tick
	}
	return false
}

// expectedMsgIDs are the message ids Trellis may store rec under: its
// event id, or an id derived from its payload (an add's idempotency key,
// an embedding's chunks).
func expectedMsgIDs(rec events.Recorded) []string {
	ids := []string{rec.ID}
	switch rec.Type {
	case taskqueue.Added:
		var p struct {
			Queue string `json:"queue"`
			Key   string `json:"idempotency_key"`
		}
		if json.Unmarshal(rec.Payload, &p) == nil && p.Key != "" {
			ids = append(ids, taskqueue.IdempotencyMsgID(p.Queue, p.Key))
		}
	case events.ChunksEmbedded:
		var p events.ChunksEmbeddedPayload
		if json.Unmarshal(rec.Payload, &p) == nil {
			ids = append(ids, events.EmbeddedMsgID(p.Model, p.Vectors))
		}
	}
	return ids
}

// identityFindings checks a stored event's message id, id and times.
func identityFindings(rec events.Recorded, m meta, aggregate string, line int) []Finding {
	var out []Finding
	f := func(kind, detail string, args ...any) {
		out = append(out, Finding{Kind: kind, Stream: rec.Stream, Seq: rec.Seq, Line: line, Subject: rec.Subject, Aggregate: aggregate,
			EventID: rec.ID, Detail: fmt.Sprintf(detail, args...)})
	}
	id, err := ulid.ParseStrict(rec.ID)
	if err != nil {
		f(FindingForeign, "its id %q is not a ULID: Trellis never made it", clipText(rec.ID))
		return out
	}
	if m.Scheduler == "" {
		switch {
		case m.MsgID == "":
			f(FindingForeign, "stored without the message id (Nats-Msg-Id) every Trellis append carries: published from outside Trellis (an edit re-published, or a forged event)")
		default:
			ok := false
			for _, want := range expectedMsgIDs(rec) {
				ok = ok || m.MsgID == want
			}
			if !ok {
				f(FindingForeign, "stored under message id %q, not its event id: published from outside Trellis", clipText(m.MsgID))
			}
		}
	}
	made := ulid.Time(id.Time())
	if d := made.Sub(rec.Time); d > MaxClockSkew || d < -MaxClockSkew {
		f(FindingMisdated, "its id was made at %s but its time says %s", made.UTC().Format(time.RFC3339Nano), rec.Time.UTC().Format(time.RFC3339Nano))
	}
	if !m.Stored.IsZero() {
		lag := m.Stored.Sub(rec.Time)
		if lag < -MaxClockSkew || (m.Scheduler == "" && lag > MaxAppendDelay) {
			f(FindingMisdated, "the log stored it at %s, but its time says %s", m.Stored.UTC().Format(time.RFC3339Nano), rec.Time.UTC().Format(time.RFC3339Nano))
		}
	}
	return out
}

func clipText(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}

// timerLedger accounts for the sequences a stream lost to timers firing:
// a timer is stored in the atomic batch that decided it (after its
// decider), and when it fires the server publishes its message (the due
// or tick event, with the timer's Nats-Batch-Id and Nats-Batch-Sequence
// and a Nats-Scheduler header naming it) and deletes the timer. A deleted
// sequence is a fired timer, not a removal, when the message stored
// before it belongs to an atomic batch and a message published from a
// timer later names that batch and the deleted sequence's position in it.
// Every other deleted sequence is reported; so is a message that claims
// to come from a timer no deleted sequence matches (on a whole stream).
// A timer may fire twice: a server killed between publishing a timer's
// message and deleting the timer fires it again when it restarts (seen
// with `trellis serve` killed with SIGKILL while delayed tasks came due),
// so a second message of a timer that fired recently is its re-fire.
type timerLedger struct {
	// last is the batch of the message stored last.
	lastSeq      uint64
	lastBatch    string
	lastBatchSeq uint64
	// pending are deleted sequences that may be fired timers, by
	// "<batch id>/<position>".
	pending map[string]uint64
	// Fired counts deleted sequences explained as fired timers.
	fired uint64
	// recent holds the keys of the timers fired last (at most
	// maxRecentTimers, oldest first in recentOrder), for their re-fires.
	recent      map[string]bool
	recentOrder []string
}

// maxRecentTimers bounds the fired timers a ledger remembers for their
// re-fires (which follow their first fire within a server restart).
const maxRecentTimers = 1 << 12

// maxPendingTimers bounds the deleted sequences a ledger holds waiting for
// their timer's message; beyond it, a deletion is reported at once.
const maxPendingTimers = 1 << 16

func newTimerLedger() *timerLedger {
	return &timerLedger{pending: map[string]uint64{}, recent: map[string]bool{}}
}

// stored records a message of the stream (in order).
func (l *timerLedger) stored(seq uint64, m meta) {
	l.lastSeq, l.lastBatch, l.lastBatchSeq = seq, "", 0
	if m.Scheduler == "" && m.BatchID != "" {
		l.lastBatch, l.lastBatchSeq = m.BatchID, m.BatchSeq
	}
}

// gap records deleted sequences from..to and returns those that cannot be
// fired timers (to report now).
func (l *timerLedger) gap(from, to uint64) [][2]uint64 {
	if l.lastBatch == "" || l.lastSeq == 0 || from != l.lastSeq+1 || to-from > 16 || len(l.pending) >= maxPendingTimers {
		return [][2]uint64{{from, to}}
	}
	for s := from; s <= to; s++ {
		l.pending[fmt.Sprintf("%s/%d", l.lastBatch, l.lastBatchSeq+s-l.lastSeq)] = s
	}
	return nil
}

// fire takes up a message published from a timer; ok is false when no
// deleted sequence is its timer.
func (l *timerLedger) fire(m meta) bool {
	key := fmt.Sprintf("%s/%d", m.BatchID, m.BatchSeq)
	if m.BatchID == "" {
		return false
	}
	if _, ok := l.pending[key]; ok {
		delete(l.pending, key)
		l.fired++
		l.recent[key] = true
		l.recentOrder = append(l.recentOrder, key)
		if len(l.recentOrder) > maxRecentTimers {
			delete(l.recent, l.recentOrder[0])
			l.recentOrder = l.recentOrder[1:]
		}
		return true
	}
	return l.recent[key] // a re-fire
}

// unexplained returns the deleted sequences no timer's message explained,
// as ranges in order.
func (l *timerLedger) unexplained() [][2]uint64 {
	var seqs []uint64
	for _, s := range l.pending {
		seqs = append(seqs, s)
	}
	slices.Sort(seqs)
	var out [][2]uint64
	for _, s := range seqs {
		if n := len(out); n > 0 && out[n-1][1]+1 == s {
			out[n-1][1] = s
			continue
		}
		out = append(out, [2]uint64{s, s})
	}
	return out
}
