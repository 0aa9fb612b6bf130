package command_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/trellis/trellis/command"
	"github.com/trellis/trellis/events"
	"github.com/trellis/trellis/events/eventstest"
)

// waitFor polls cond until it holds (a wait-until with a deadline, not a
// timed claim).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// Commands submitted together on one aggregate are decided in order and
// appended as one chain; each caller gets the state after its own event
// and a refusal stays with its command.
func TestSubmitCombinesARound(t *testing.T) {
	t.Parallel()
	b := eventstest.Start(t)
	ctx := ctxT(t)
	r := command.New(b.Store, counterKind, command.Config{})
	id := newID()
	if _, err := r.Do(ctx, id, "a", func(counter) (command.Decision, error) { return inc(id, 1), nil }); err != nil {
		t.Fatal(err)
	}
	// Hold the aggregate so the submitted commands gather into one round.
	unlock := r.Lock(id)
	errOdd := errors.New("odd commands are refused")
	const n = 10
	type out struct {
		st  command.State[counter]
		err error
	}
	outs := make([]out, n)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		if i == 1 {
			// The first submitter leads and waits for the lock with its
			// own command alone; only then do the other nine arrive, so
			// they wait for the next round however the goroutines are
			// scheduled.
			waitFor(t, "the leader to take its round", func() bool { return r.Waiting(id) == 0 && !r.Idle(id) })
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			st, err := r.Submit(ctx, id, command.Command[counter]{Actor: "w", Decide: func(c counter) (command.Decision, error) {
				if i%2 == 1 {
					return command.Decision{}, errOdd
				}
				return inc(id, 10), nil
			}}, nil)
			outs[i] = out{st, err}
		}()
	}
	waitFor(t, "nine waiting commands", func() bool { return r.Waiting(id) == n-1 })
	before := b.Store.GroupCommitStats()
	unlock()
	wg.Wait()
	seqs := map[uint64]bool{}
	for i, o := range outs {
		if i%2 == 1 {
			if !errors.Is(o.err, errOdd) {
				t.Fatalf("command %d: %v; want its own refusal", i, o.err)
			}
			continue
		}
		if o.err != nil {
			t.Fatalf("command %d: %v", i, o.err)
		}
		if seqs[o.st.Seq] {
			t.Fatalf("two commands report #%d", o.st.Seq)
		}
		seqs[o.st.Seq] = true
		got, err := b.Store.Get(ctx, events.StreamTasks, o.st.Seq)
		if err != nil || got.AggregateID != id || o.st.Value.Sum != 1+10*o.st.Value.Events-10 {
			t.Fatalf("command %d: state %+v at #%d (%v)", i, o.st.Value, o.st.Seq, err)
		}
	}
	final, err := r.Load(ctx, id)
	if err != nil || final.Value.Events != 6 || final.Value.Sum != 51 {
		t.Fatalf("final = %+v, %v; want 6 events summing to 51", final.Value, err)
	}
	// The leader's lone command (accepted or refused), then one chain of
	// the accepted commands among the other nine.
	after := b.Store.GroupCommitStats()
	if batches, batched, singles := after.Batches-before.Batches, after.BatchedEvents-before.BatchedEvents, after.Singles-before.Singles; batches != 1 || batched < 4 || batched+singles != 5 {
		t.Fatalf("stats %+v -> %+v; want one chain holding the second round's accepted commands", before, after)
	}
}

// A round that loses the race to another process decides again on the
// caught-up state; every command still succeeds once.
func TestSubmitRoundLosesARace(t *testing.T) {
	t.Parallel()
	b := eventstest.Start(t)
	ctx := ctxT(t)
	r := command.New(b.Store, counterKind, command.Config{})
	other := command.New(b.Store, counterKind, command.Config{})
	id := newID()
	if _, err := r.Do(ctx, id, "a", func(counter) (command.Decision, error) { return inc(id, 1), nil }); err != nil {
		t.Fatal(err)
	}
	raced := false
	decisions := 0
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := 0; i < 5; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := r.Submit(ctx, id, command.Command[counter]{Actor: "w", Decide: func(c counter) (command.Decision, error) {
				mu.Lock()
				decisions++
				if !raced {
					raced = true
					if _, err := other.Do(ctx, id, "b", func(counter) (command.Decision, error) { return inc(id, 100), nil }); err != nil {
						t.Error(err)
					}
				}
				mu.Unlock()
				return inc(id, 1), nil
			}}, nil)
			if err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	final, err := r.Load(ctx, id)
	if err != nil || final.Value.Events != 7 || final.Value.Sum != 106 {
		t.Fatalf("final = %+v, %v; want 7 events summing to 106", final.Value, err)
	}
	if decisions <= 5 {
		t.Fatalf("%d decisions; the round that lost the race must decide again", decisions)
	}
}

// The leader's own cancellation does not fail the commands it leads.
func TestSubmitLeaderCancelled(t *testing.T) {
	t.Parallel()
	b := eventstest.Start(t)
	ctx := ctxT(t)
	r := command.New(b.Store, counterKind, command.Config{})
	id := newID()
	unlock := r.Lock(id)
	leaderCtx, cancelLeader := context.WithCancel(ctx)
	leaderDone := make(chan error, 1)
	go func() {
		_, err := r.Submit(leaderCtx, id, command.Command[counter]{Actor: "l", Decide: func(counter) (command.Decision, error) { return inc(id, 1), nil }}, nil)
		leaderDone <- err
	}()
	waitFor(t, "the leader to take its round", func() bool { return r.Waiting(id) == 0 && !r.Idle(id) })
	followerDone := make(chan error, 1)
	go func() {
		_, err := r.Submit(ctx, id, command.Command[counter]{Actor: "f", Decide: func(counter) (command.Decision, error) { return inc(id, 2), nil }}, nil)
		followerDone <- err
	}()
	waitFor(t, "the follower to wait", func() bool { return r.Waiting(id) == 1 })
	cancelLeader()
	unlock()
	if err := <-followerDone; err != nil {
		t.Fatalf("follower: %v", err)
	}
	<-leaderDone
	final, err := r.Load(ctx, id)
	if err != nil || final.Value.Sum != 3 {
		t.Fatalf("final = %+v, %v; want both commands applied", final.Value, err)
	}
}
