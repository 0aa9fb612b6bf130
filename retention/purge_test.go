package retention_test

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/events"
	"github.com/trellis/trellis/retention"
	"github.com/trellis/trellis/taskqueue"
)

// TestPrunePurgesOnlyWhatRecordsAccountFor: a prune removes a queue's
// tombstones in one subject-filtered purge (trellis.queue.Q.*.pruned),
// which takes an upper bound but no lower one. Before them, a client
// holding NATS credentials published a message on the queue's tombstone
// subject (plain JetStream), and a claimed task of the queue left its add
// and claim among the finished tasks' events: no record accounts for
// them. The prune removes the finished tasks and their tombstones, and
// leaves those messages where they were; verify finds after the prune
// exactly what it found before.
func TestPrunePurgesOnlyWhatRecordsAccountFor(t *testing.T) {
	t.Parallel()
	b, q, js := startQueueJS(t)
	store, ctx := b.Store, ctxT(t)
	f := &fixture{q: q}
	finish := func(n int) {
		for i := 0; i < n; i++ {
			task := f.add(t, "done", trellis.AddTaskRequest{Queue: "mixed"})
			f.done(t, "mixed", task.TaskID)
		}
	}
	finish(2)
	open := f.add(t, "open", trellis.AddTaskRequest{Queue: "mixed"}).TaskID
	f.claim(t, "mixed", open)
	finish(2)
	forged, err := js.Publish(ctx, taskqueue.Subject("mixed", "01KFORGEDTOMBSTONE000000000", taskqueue.Pruned), []byte(`{"forged":true}`))
	if err != nil {
		t.Fatal(err)
	}
	finish(3)
	// The open task's add and claim, and the forged message, as stored.
	keep := map[uint64]string{forged.Sequence: taskqueue.Subject("mixed", "01KFORGEDTOMBSTONE000000000", taskqueue.Pruned)}
	err = store.Scan(ctx, events.StreamQueue, events.ScanRange{Filter: taskqueue.Filter(open)}, func(m events.Message) error {
		keep[m.Seq] = m.Subject
		return nil
	})
	if err != nil || len(keep) != 3 {
		t.Fatalf("the messages to keep: %v, %v", keep, err)
	}
	before := verifyLog(t, store)

	res, err := retention.Prune(ctx, store, retention.Options{OlderThan: time.Minute, Archive: t.TempDir(), Now: later})
	if err != nil {
		t.Fatal(err)
	}
	if res.Tasks != 7 {
		t.Fatalf("pruned %d tasks, want the 7 finished; kept %v", res.Tasks, res.Kept)
	}
	stream, err := js.Stream(ctx, events.StreamQueue)
	if err != nil {
		t.Fatal(err)
	}
	for seq, subject := range keep {
		m, err := stream.GetMsg(ctx, seq)
		if err != nil || m.Subject != subject {
			t.Fatalf("#%d (%s) after the prune: %v, %v", seq, subject, m, err)
		}
	}
	// Every finished task's events are gone but its last tombstone (the
	// stream's last message stays).
	info, err := stream.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.State.Msgs != uint64(len(keep))+2 { // the record and the last tombstone
		t.Fatalf("%d messages left, want the %d kept, the record and the last tombstone", info.State.Msgs, len(keep))
	}
	after := verifyLog(t, store)
	if !reflect.DeepEqual(before, after) {
		t.Fatalf("verify found before the prune:\n%v\nand after:\n%v", before, after)
	}
	if _, err := q.Show(ctx, open); err != nil {
		t.Fatalf("the open task after the prune: %v", err)
	}
}

// TestPruneTombstonePurgeKeepsTheStreamsLastMessage: a batch of finished
// tasks ends the stream with its tombstones, which go in one purge of the
// queue's tombstones bounded before the stream's last message: every
// tombstone but the last is removed, and the last stays (projections
// catch up to the stream's last sequence). A second prune's purge also
// removes the tombstone the first one left, which its record accounts
// for. Verify is OK after each. A third round prunes in two batches, and
// a client publishes a message on the queue's tombstone subject while
// the second batch's archive is written: the second batch's purge stops
// right before that message, removing the tombstone the first batch
// left and leaving the message, which is all verify then reports.
func TestPruneTombstonePurgeKeepsTheStreamsLastMessage(t *testing.T) {
	t.Parallel()
	b, q, js := startQueueJS(t)
	store, ctx := b.Store, ctxT(t)
	stream, err := js.Stream(ctx, events.StreamQueue)
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{q: q}
	tombstones := func() []uint64 {
		var seqs []uint64
		err := store.Scan(ctx, events.StreamQueue, events.ScanRange{Filter: taskqueue.Subject("tail", "*", taskqueue.Pruned)}, func(m events.Message) error {
			seqs = append(seqs, m.Seq)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return seqs
	}
	var forged uint64
	for round := 1; round <= 3; round++ {
		for i := 0; i < 3; i++ {
			task := f.add(t, "done", trellis.AddTaskRequest{Queue: "tail"})
			f.done(t, "tail", task.TaskID)
		}
		opts := retention.Options{OlderThan: time.Minute, Archive: t.TempDir(), Now: later}
		if round == 3 {
			archives := 0
			opts.BatchTasks = 2
			opts.AfterArchive = func(string) {
				if archives++; archives != 2 {
					return
				}
				ack, err := js.Publish(ctx, taskqueue.Subject("tail", "01KFORGEDTOMBSTONE000000000", taskqueue.Pruned), []byte(`{"forged":true}`))
				if err != nil {
					t.Error(err)
					return
				}
				forged = ack.Sequence
			}
		}
		res, err := retention.Prune(ctx, store, opts)
		if err != nil {
			t.Fatal(err)
		}
		if res.Tasks != 3 {
			t.Fatalf("round %d: pruned %d tasks, want 3; kept %v", round, res.Tasks, res.Kept)
		}
		info, err := stream.Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		last := info.State.LastSeq
		if m, err := stream.GetMsg(ctx, last); err != nil || !strings.HasPrefix(m.Subject, "trellis.queue.tail.") || !strings.HasSuffix(m.Subject, "."+taskqueue.Pruned) {
			t.Fatalf("round %d: the stream's last message #%d: %v, %v; want the batch's last tombstone", round, last, m, err)
		}
		// The last tombstone only: the purge removed the others, and the
		// one the round before left; in the third round the forged
		// message stays too.
		want := []uint64{last}
		if round == 3 {
			want = []uint64{forged, last}
		}
		if got := tombstones(); !reflect.DeepEqual(got, want) {
			t.Fatalf("round %d: tombstones left at %v, want %v", round, got, want)
		}
		fs := verifyLog(t, store)
		for _, f := range fs {
			if round < 3 || f.Seq != forged {
				t.Fatalf("round %d: verify after the prune: %v", round, fs)
			}
		}
		if round == 3 && len(fs) == 0 {
			t.Fatalf("verify reports nothing of the message published on the tombstone subject (#%d)", forged)
		}
	}
}
