package command_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/trellis/trellis/command"
	"github.com/trellis/trellis/events"
	"github.com/trellis/trellis/events/eventstest"
)

// transfer moves 1 from counter a to counter b as one atomic command
// (a's sum goes down, b's up), refusing when a would go below zero.
func transfer(ctx context.Context, r *command.Runner[counter], store *events.Store, a, b string) error {
	var sa, sb command.State[counter]
	var ps []events.Pending
	_, err := command.Atomic(ctx, store, command.Config{MaxAttempts: 64}, func(ctx context.Context) ([]events.Pending, error) {
		var err error
		if sa, err = r.Load(ctx, a); err != nil {
			return nil, err
		}
		if sb, err = r.Load(ctx, b); err != nil {
			return nil, err
		}
		if sa.Value.Sum <= 0 {
			return nil, errEmpty
		}
		pa, err := r.Pending(ctx, sa, "t", inc(a, -1))
		if err != nil {
			return nil, err
		}
		pb, err := r.Pending(ctx, sb, "t", inc(b, 1))
		if err != nil {
			return nil, err
		}
		ps = []events.Pending{pa, pb}
		return ps, nil
	})
	return err
}

var errEmpty = errors.New("nothing left to move")

// Concurrent atomic commands over two aggregates: each one that succeeds
// changes both, lost races decide again, and a refusal on a fresh state
// is final. The sums are conserved and never go negative.
func TestAtomicKeepsAggregatesConsistent(t *testing.T) {
	t.Parallel()
	b := eventstest.Start(t)
	ctx := ctxT(t)
	seed := command.New(b.Store, counterKind, command.Config{})
	a, c := newID(), newID()
	if _, err := seed.Do(ctx, a, "seed", func(counter) (command.Decision, error) { return inc(a, 10), nil }); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	moved, refused := 0, 0
	for w := 0; w < 6; w++ {
		r := command.New(b.Store, counterKind, command.Config{}) // a process of its own
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 3; i++ {
				err := transfer(ctx, r, b.Store, a, c)
				mu.Lock()
				switch {
				case err == nil:
					moved++
				case errors.Is(err, errEmpty):
					refused++
				default:
					t.Error(err)
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	fresh := command.New(b.Store, counterKind, command.Config{CacheSize: -1})
	sa, _ := fresh.Load(ctx, a)
	sc, _ := fresh.Load(ctx, c)
	if moved != 10 || refused != 8 || sa.Value.Sum != 0 || sc.Value.Sum != 10 || sa.Value.Events != 11 || sc.Value.Events != 10 {
		t.Fatalf("moved %d, refused %d; a = %+v, c = %+v; want 10 moved, 8 refused, a 0 in 11 events, c 10 in 10", moved, refused, sa.Value, sc.Value)
	}
}
