package command_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/trellis/trellis/command"
	"github.com/trellis/trellis/events"
	"github.com/trellis/trellis/events/eventstest"
)

// counter is a toy aggregate: the number of "inc" events and their sum.
type counter struct {
	Events int
	Sum    int
}

type incPayload struct {
	By int `json:"by"`
}

var counterKind = command.Kind[counter]{
	Name:   "counter",
	Stream: events.StreamTasks,
	Filter: func(id string) string { return "trellis.tasks." + id + ".>" },
	Fold: func(c counter, rec events.Recorded) (counter, error) {
		var p incPayload
		if err := rec.DecodePayload(&p); err != nil {
			return c, err
		}
		c.Events++
		c.Sum += p.By
		return c, nil
	},
	Schema: 1,
}

func inc(id string, by int) command.Decision {
	return command.Decision{Subject: "trellis.tasks." + id + ".inc", Type: "inc", Payload: incPayload{By: by}}
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func newID() string { return "c" + events.NewID(time.Now()) }

// A command decided from a cached state that another process has moved
// past loses the race, catches up and decides again.
func TestRunnerStaleCacheRetries(t *testing.T) {
	t.Parallel()
	b := eventstest.Start(t)
	ctx := ctxT(t)
	ra := command.New(b.Store, counterKind, command.Config{})
	rb := command.New(b.Store, counterKind, command.Config{})
	id := newID()
	if _, err := ra.Do(ctx, id, "a", func(counter) (command.Decision, error) { return inc(id, 1), nil }); err != nil {
		t.Fatal(err)
	}
	if _, err := rb.Do(ctx, id, "b", func(counter) (command.Decision, error) { return inc(id, 10), nil }); err != nil {
		t.Fatal(err)
	}
	var seen []counter
	st, err := ra.Do(ctx, id, "a", func(c counter) (command.Decision, error) {
		seen = append(seen, c)
		return inc(id, 100), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(seen) != 2 || seen[0].Sum != 1 || seen[1].Sum != 11 {
		t.Fatalf("decided on %+v; want the stale {1 1} then the caught-up {2 11}", seen)
	}
	if st.Value.Sum != 111 || st.Value.Events != 3 || !st.Fresh {
		t.Fatalf("state = %+v", st)
	}
}

// A refusal decided from a cached state is decided again from the log
// before it is reported; a refusal the log confirms is reported.
func TestRunnerRefusalFromCacheIsRedecided(t *testing.T) {
	t.Parallel()
	b := eventstest.Start(t)
	ctx := ctxT(t)
	ra := command.New(b.Store, counterKind, command.Config{})
	rb := command.New(b.Store, counterKind, command.Config{})
	id := newID()
	if _, err := ra.Do(ctx, id, "a", func(counter) (command.Decision, error) { return inc(id, 1), nil }); err != nil {
		t.Fatal(err)
	}
	if _, err := rb.Do(ctx, id, "b", func(counter) (command.Decision, error) { return inc(id, 1), nil }); err != nil {
		t.Fatal(err)
	}
	errTooSmall := errors.New("sum below 2")
	needTwo := func(c counter) (command.Decision, error) {
		if c.Sum < 2 {
			return command.Decision{}, errTooSmall
		}
		return inc(id, 5), nil
	}
	if _, err := ra.Do(ctx, id, "a", needTwo); err != nil {
		t.Fatalf("decided from the cache (sum 1) and refused: %v", err)
	}
	other := newID()
	if _, err := ra.Do(ctx, other, "a", func(counter) (command.Decision, error) { return inc(other, 1), nil }); err != nil {
		t.Fatal(err)
	}
	if _, err := ra.Do(ctx, other, "a", func(c counter) (command.Decision, error) {
		if c.Sum < 2 {
			return command.Decision{}, errTooSmall
		}
		return inc(other, 5), nil
	}); !errors.Is(err, errTooSmall) {
		t.Fatalf("refusal the log confirms: %v; want errTooSmall", err)
	}
}

// A command that loses every race reports a conflict after MaxAttempts
// decisions.
func TestRunnerGivesUpAfterMaxAttempts(t *testing.T) {
	t.Parallel()
	b := eventstest.Start(t)
	ctx := ctxT(t)
	ra := command.New(b.Store, counterKind, command.Config{MaxAttempts: 3})
	rb := command.New(b.Store, counterKind, command.Config{})
	id := newID()
	if _, err := ra.Do(ctx, id, "a", func(counter) (command.Decision, error) { return inc(id, 1), nil }); err != nil {
		t.Fatal(err)
	}
	decisions := 0
	_, err := ra.Do(ctx, id, "a", func(counter) (command.Decision, error) {
		decisions++
		// Another writer gets in between every decision and its append.
		if _, err := rb.Do(ctx, id, "b", func(counter) (command.Decision, error) { return inc(id, 1), nil }); err != nil {
			t.Error(err)
		}
		return inc(id, 100), nil
	})
	if !errors.Is(err, command.ErrConflict) || decisions != 3 {
		t.Fatalf("err = %v after %d decisions; want ErrConflict after 3", err, decisions)
	}
}

// The backoff between attempts ends with the context.
func TestRunnerBackoffHonoursContext(t *testing.T) {
	t.Parallel()
	b := eventstest.Start(t)
	ra := command.New(b.Store, counterKind, command.Config{MaxAttempts: 100, Backoff: func(int) time.Duration { return time.Hour }})
	rb := command.New(b.Store, counterKind, command.Config{})
	id := newID()
	ctx := ctxT(t)
	if _, err := ra.Do(ctx, id, "a", func(counter) (command.Decision, error) { return inc(id, 1), nil }); err != nil {
		t.Fatal(err)
	}
	if _, err := rb.Do(ctx, id, "b", func(counter) (command.Decision, error) { return inc(id, 1), nil }); err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	_, err := ra.Do(short, id, "a", func(counter) (command.Decision, error) { return inc(id, 1), nil })
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v; want the context's deadline (an hour's backoff must not be slept)", err)
	}
}

// Commands serialized with Lock on one runner never lose a race: each
// decides once, on the state the previous one left.
func TestRunnerLockSerializes(t *testing.T) {
	t.Parallel()
	b := eventstest.Start(t)
	ctx := ctxT(t)
	r := command.New(b.Store, counterKind, command.Config{})
	id := newID()
	var decisions atomic.Int64
	var wg sync.WaitGroup
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			unlock := r.Lock(id)
			defer unlock()
			if _, err := r.Do(ctx, id, "w", func(counter) (command.Decision, error) {
				decisions.Add(1)
				return inc(id, 1), nil
			}); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	st, err := r.Load(ctx, id)
	if err != nil || st.Value.Events != 20 || decisions.Load() != 20 {
		t.Fatalf("state = %+v (%v) after %d decisions; want 20 events, 20 decisions", st, err, decisions.Load())
	}
}

// The cache is bounded; an evicted aggregate is folded from the log again.
func TestRunnerCacheBound(t *testing.T) {
	t.Parallel()
	b := eventstest.Start(t)
	ctx := ctxT(t)
	r := command.New(b.Store, counterKind, command.Config{CacheSize: 2})
	other := command.New(b.Store, counterKind, command.Config{})
	ids := []string{newID(), newID(), newID()}
	for i, id := range ids {
		if _, err := r.Do(ctx, id, "a", func(counter) (command.Decision, error) { return inc(id, i+1), nil }); err != nil {
			t.Fatal(err)
		}
	}
	// ids[0] was evicted: its next command loads it from the log, which
	// another process moved on meanwhile, so no race is lost.
	if _, err := other.Do(ctx, ids[0], "b", func(counter) (command.Decision, error) { return inc(ids[0], 10), nil }); err != nil {
		t.Fatal(err)
	}
	decisions := 0
	st, err := r.Do(ctx, ids[0], "a", func(c counter) (command.Decision, error) {
		decisions++
		return inc(ids[0], 100), nil
	})
	if err != nil || decisions != 1 || st.Value.Sum != 111 {
		t.Fatalf("state = %+v, %v after %d decisions; want sum 111 decided once from the log", st.Value, err, decisions)
	}
}

// A decision under a message id the stream holds is reported with the
// stored event's sequence; nothing is appended.
func TestRunnerDuplicateMessageID(t *testing.T) {
	t.Parallel()
	b := eventstest.Start(t)
	ctx := ctxT(t)
	r := command.New(b.Store, counterKind, command.Config{})
	first, second := newID(), newID()
	d := inc(first, 1)
	d.MsgID = "key:" + first
	st, err := r.Do(ctx, first, "a", func(counter) (command.Decision, error) { return d, nil })
	if err != nil {
		t.Fatal(err)
	}
	_, err = r.Do(ctx, second, "a", func(counter) (command.Decision, error) {
		d2 := inc(second, 1)
		d2.MsgID = "key:" + first
		return d2, nil
	})
	var dup *command.DuplicateError
	if !errors.As(err, &dup) || dup.Seq != st.Seq {
		t.Fatalf("err = %v; want a duplicate of #%d", err, st.Seq)
	}
	if st, err := r.Load(ctx, second); err != nil || st.Exists() {
		t.Fatalf("second aggregate = %+v, %v; want nothing appended", st, err)
	}
}

// A fold error (an event that means nothing) is reported, naming the
// aggregate and the sequence.
func TestRunnerFoldError(t *testing.T) {
	t.Parallel()
	b := eventstest.Start(t)
	ctx := ctxT(t)
	id := newID()
	if err := b.Conn.Publish("trellis.tasks."+id+".junk", []byte("not an envelope")); err != nil {
		t.Fatal(err)
	}
	if err := b.Conn.Flush(); err != nil {
		t.Fatal(err)
	}
	r := command.New(b.Store, counterKind, command.Config{})
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err := r.Load(ctx, id)
		if err != nil {
			if want := fmt.Sprintf("counter %s", id); !strings.Contains(err.Error(), want) {
				t.Fatalf("err = %v; want it to name %q", err, want)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the junk message never reached the stream")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Every event the runner appends names the hash of its aggregate's
// previous event, whether the state came from the log, the cache, another
// process, a round of combined commands or RunAll.
func TestRunnerChainsEvents(t *testing.T) {
	t.Parallel()
	b := eventstest.Start(t)
	ctx := ctxT(t)
	ra := command.New(b.Store, counterKind, command.Config{})
	rb := command.New(b.Store, counterKind, command.Config{})
	id := newID()
	incOne := func(counter) (command.Decision, error) { return inc(id, 1), nil }
	for _, r := range []*command.Runner[counter]{ra, rb, ra, rb} {
		if _, err := r.Do(ctx, id, "a", incOne); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	for i := 0; i < 6; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := ra.Submit(ctx, id, command.Command[counter]{Actor: "s", Decide: incOne}, nil); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	st, err := rb.Load(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rb.Run(ctx, command.State[counter]{ID: id, Value: st.Value, Seq: st.Seq}, "m", incOne); err != nil {
		t.Fatal(err) // a state without its head (as from a message)
	}
	other := newID()
	outs := rb.RunAll(ctx, []command.Independent[counter]{
		{State: command.State[counter]{ID: id, Value: st.Value, Seq: st.Seq, Fresh: true}, Decide: incOne},
		{State: command.State[counter]{ID: other, Fresh: true}, Decide: func(counter) (command.Decision, error) { return inc(other, 1), nil }},
	})
	for _, o := range outs {
		if o.Err != nil {
			t.Fatal(o.Err)
		}
	}
	recs, _, err := b.Store.Load(ctx, events.StreamTasks, counterKind.Filter(id))
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 12 {
		t.Fatalf("%d events; want 12", len(recs))
	}
	prev := ""
	for i, r := range recs {
		if r.Prev != prev {
			t.Fatalf("event %d (#%d) names previous %q; want %q", i, r.Seq, r.Prev, prev)
		}
		prev = events.Hash(r.Envelope)
	}
}
