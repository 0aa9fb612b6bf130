package events_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/trellis/trellis/events"
	"github.com/trellis/trellis/events/eventstest"
	"github.com/trellis/trellis/taskqueue"
)

// TestLastSeqOfGathersConcurrentReads: many concurrent reads of
// aggregates' last events (more than one request holds, of aggregates with
// one subject and with many, of unknown ones, and of ids that are
// prefixes of others) each get their own aggregate's last sequence, as a
// load finds it.
func TestLastSeqOfGathersConcurrentReads(t *testing.T) {
	t.Parallel()
	bundle := eventstest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	store := bundle.Store
	base := events.NewID(time.Now())
	want := map[string]uint64{}
	var ids []string
	for i := 0; i < 90; i++ {
		id := fmt.Sprintf("%s%d", base, i) // ids 1 and 10..19 share a prefix
		ids = append(ids, id)
		if i%5 == 4 {
			continue // unknown: no event
		}
		seqs := appendTaskEvents(t, store, id, 1+i%4, 0)
		want[id] = seqs[len(seqs)-1]
	}
	appendTaskEvents(t, store, events.NewID(time.Now()), 20, 0) // events of another after them all
	for round := 0; round < 3; round++ {
		var wg sync.WaitGroup
		errs := make(chan error, len(ids))
		for _, id := range ids {
			wg.Add(1)
			go func() {
				defer wg.Done()
				got, err := store.LastSeqOf(ctx, events.StreamQueue, taskqueue.FilterIn("q", id))
				if err != nil {
					errs <- err
					return
				}
				_, loaded, err := store.Load(ctx, events.StreamQueue, taskqueue.Filter(id))
				if err != nil {
					errs <- err
					return
				}
				if got != want[id] || got != loaded {
					errs <- fmt.Errorf("last of %s = %d; want %d (a load finds %d)", id, got, want[id], loaded)
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
	}
}

// TestLastSeqReadTellsWhenItsRequestWasSent: each read says when the
// gathered request that answered it was sent, between the call and its
// answer; reads more than one request holds go in several requests, sent
// one after the other, so they are told different times (a read queued
// behind an earlier request is not dated by its call).
func TestLastSeqReadTellsWhenItsRequestWasSent(t *testing.T) {
	t.Parallel()
	bundle := eventstest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	store := bundle.Store
	id := events.NewID(time.Now())
	seqs := appendTaskEvents(t, store, id, 2, 0)
	const n = 70 // more than two requests hold
	var mu sync.Mutex
	sent := map[time.Time]int{}
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			called := time.Now()
			seq, at, err := store.LastSeqRead(ctx, events.StreamQueue, taskqueue.FilterIn("q", id))
			answered := time.Now()
			if err != nil || seq != seqs[len(seqs)-1] {
				t.Errorf("last of %s = %d, %v; want %d", id, seq, err, seqs[len(seqs)-1])
				return
			}
			if at.Before(called) || at.After(answered) {
				t.Errorf("request sent at %v; want between the call (%v) and the answer (%v)", at, called, answered)
			}
			mu.Lock()
			sent[at]++
			mu.Unlock()
		}()
	}
	wg.Wait()
	if len(sent) < 3 {
		t.Errorf("%d reads told %d request times; want at least 3 requests (at most 32 reads each)", n, len(sent))
	}
	if len(sent) == n {
		t.Errorf("each of %d concurrent reads told a time of its own: the times are not their requests'", n)
	}
}

// TestLastSeqOfTooManySubjects: aggregates with so many subjects that one
// request cannot answer them all (the server answers at most 1,024) are
// read one by one, and each still gets its last sequence.
func TestLastSeqOfTooManySubjects(t *testing.T) {
	t.Parallel()
	bundle := eventstest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	store := bundle.Store
	var ids []string
	want := map[string]uint64{}
	for i := 0; i < 40; i++ {
		id := events.NewID(time.Now())
		ids = append(ids, id)
		seqs := appendTaskEvents(t, store, id, 40, 0) // 40 subjects each
		want[id] = seqs[len(seqs)-1]
	}
	// Gathered: hold the reads back until all wait, by starting them
	// together many times over.
	var wg sync.WaitGroup
	errs := make(chan error, 4*len(ids))
	for round := 0; round < 4; round++ {
		for _, id := range ids {
			wg.Add(1)
			go func() {
				defer wg.Done()
				got, err := store.LastSeqOf(ctx, events.StreamQueue, taskqueue.Filter(id))
				if err == nil && got != want[id] {
					err = fmt.Errorf("last of %s = %d; want %d", id, got, want[id])
				}
				if err != nil {
					errs <- err
				}
			}()
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestLastSeqOfBadInput: a malformed filter and an unknown stream are
// clear errors; an ended context returns at once with its error.
func TestLastSeqOfBadInput(t *testing.T) {
	t.Parallel()
	bundle := eventstest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	store := bundle.Store
	for _, f := range []string{"", "trellis..x", ".trellis.x", "trellis.x.", "trellis x"} {
		if _, err := store.LastSeqOf(ctx, events.StreamQueue, f); err == nil || !strings.Contains(err.Error(), "malformed") {
			t.Errorf("LastSeqOf(%q) = %v; want a malformed filter error", f, err)
		}
	}
	if _, err := store.LastSeqOf(ctx, "NO_SUCH_STREAM", "trellis.queue.q.x.>"); err == nil {
		t.Error("an unknown stream answered")
	}
	ended, stop := context.WithCancel(ctx)
	stop()
	if _, err := store.LastSeqOf(ended, events.StreamQueue, "trellis.queue.q.x.>"); err == nil {
		t.Error("an ended context read")
	}
	// The store still reads after them.
	id := events.NewID(time.Now())
	seqs := appendTaskEvents(t, store, id, 2, 0)
	if got, err := store.LastSeqOf(ctx, events.StreamQueue, taskqueue.Filter(id)); err != nil || got != seqs[1] {
		t.Fatalf("LastSeqOf = %d, %v; want %d", got, err, seqs[1])
	}
}
