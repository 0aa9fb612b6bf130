package audit

import "testing"

// TestTimerLedgerRefire: a timer's message published twice (the server
// killed between publishing it and deleting the timer fires it again on
// restart, as a randomized multi-process run found) is its re-fire, not a
// message from outside Trellis; a message naming a batch position no timer
// of the stream held is still refused, and so is one without a batch.
func TestTimerLedgerRefire(t *testing.T) {
	l := newTimerLedger()
	l.stored(10, meta{MsgID: "added", BatchID: "b1", BatchSeq: 1}) // the add; its timer is seq 11
	if unexplained := l.gap(11, 11); len(unexplained) != 0 {
		t.Fatalf("the timer's deleted sequence was reported: %v", unexplained)
	}
	fired := meta{Scheduler: "trellis.queue.q._timer.task.x", BatchID: "b1", BatchSeq: 2}
	l.stored(12, fired)
	if !l.fire(fired) {
		t.Fatal("the timer's message was not matched to its timer")
	}
	l.stored(20, fired)
	if !l.fire(fired) {
		t.Fatal("the timer's second message (a re-fire after a crash) was called foreign")
	}
	if l.fired != 1 {
		t.Fatalf("fired = %d; want 1 (a re-fire explains no deleted sequence)", l.fired)
	}
	for _, m := range []meta{
		{Scheduler: "trellis.queue.q._timer.task.x", BatchID: "b1", BatchSeq: 3},
		{Scheduler: "trellis.queue.q._timer.task.x", BatchID: "b2", BatchSeq: 2},
		{Scheduler: "trellis.queue.q._timer.task.x"},
	} {
		if l.fire(m) {
			t.Fatalf("a message naming no timer (%+v) was taken as fired", m)
		}
	}
	if u := l.unexplained(); len(u) != 0 {
		t.Fatalf("unexplained deletions %v", u)
	}
}
