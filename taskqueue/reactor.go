package taskqueue

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/command"
	"github.com/trellis/trellis/events"
)

// The reactor.
//
// Some events ask for more events: a prerequisite that ends makes its
// dependants ready or cancelled; a schedule's tick adds a task. Every
// Trellis server runs a Reactor, which takes these up through two durable
// consumers shared by all servers (queue-dependants on the ends of tasks
// that have dependants, schedule-ticks on the ticks): each event is handed
// to one server, acknowledged once its consequences are in the log, and
// handed to another server when the first dies before that. What a
// consequence appends is decided from the log (the dependant's state, the
// schedule's state) with the usual checks, so an event taken up twice
// changes nothing the second time. It also records the expiry of agent
// claims whose lease passed on queues nobody works (leasesweep.go).

// Consumer names of the reactor.
const (
	DependantsConsumer = "queue-dependants"
	TicksConsumer      = "schedule-ticks"
)

// ReactorConfig configures a Reactor.
type ReactorConfig struct {
	// Logger receives the reactor's warnings (default slog.Default()).
	Logger *slog.Logger
	// AckWait is how long an event handed to a server that died waits
	// before another server gets it (default 10 s).
	AckWait time.Duration
	// FetchWait is how long one fetch waits (default 1 s).
	FetchWait time.Duration
}

// Reactor takes up the ends of tasks with dependants and the ticks of
// schedules (see above).
type Reactor struct {
	q      *Handler
	cfg    ReactorConfig
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// StartReactor creates (or finds) the reactor's consumers and runs it
// until Stop.
func (q *Handler) StartReactor(ctx context.Context, cfg ReactorConfig) (*Reactor, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.AckWait <= 0 {
		cfg.AckWait = 10 * time.Second
	}
	if cfg.FetchWait <= 0 {
		cfg.FetchWait = time.Second
	}
	r := &Reactor{q: q, cfg: cfg}
	js := q.store.JetStream()
	deps, err := js.CreateOrUpdateConsumer(ctx, events.StreamQueue, jetstream.ConsumerConfig{
		Durable: DependantsConsumer, Description: "Trellis: ends of tasks with dependants",
		FilterSubjects: DependantSubjects(), DeliverPolicy: jetstream.DeliverAllPolicy,
		AckPolicy: jetstream.AckExplicitPolicy, AckWait: cfg.AckWait, MaxWaiting: 512,
	})
	if err != nil {
		return nil, command.StoreError("dependants consumer", err)
	}
	ticks, err := js.CreateOrUpdateConsumer(ctx, events.StreamQueue, jetstream.ConsumerConfig{
		Durable: TicksConsumer, Description: "Trellis: ticks of periodic schedules",
		FilterSubjects: TickSubjects(), DeliverPolicy: jetstream.DeliverAllPolicy,
		AckPolicy: jetstream.AckExplicitPolicy, AckWait: cfg.AckWait, MaxWaiting: 512,
	})
	if err != nil {
		return nil, command.StoreError("ticks consumer", err)
	}
	rctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	r.wg.Add(3)
	go r.run(rctx, deps, "dependants", r.resolve)
	go r.run(rctx, ticks, "ticks", r.tick)
	go func() {
		defer r.wg.Done()
		q.sweepAgentLeases(rctx, cfg.Logger) // see leasesweep.go
	}()
	return r, nil
}

// Stop stops the reactor and waits for the event in hand.
func (r *Reactor) Stop() {
	r.cancel()
	r.wg.Wait()
}

// run hands each event of cons to fn until ctx ends: acknowledged when fn
// succeeds, delivered again after a pause when it fails.
func (r *Reactor) run(ctx context.Context, cons jetstream.Consumer, what string, fn func(context.Context, events.Recorded) error) {
	defer r.wg.Done()
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		it, err := cons.Messages(jetstream.PullMaxMessages(16), jetstream.PullExpiry(max(r.cfg.FetchWait, time.Second)))
		if err != nil {
			r.cfg.Logger.Warn("reactor pull", "consumer", what, "err", err)
			_ = sleepUntil(ctx, time.Now().Add(backoff))
			backoff = min(2*backoff, 5*time.Second)
			continue
		}
		stop := context.AfterFunc(ctx, it.Stop) // Stop returns at once, not after a pull's expiry
		for {
			msg, err := it.Next()
			if err != nil {
				if ctx.Err() == nil {
					r.cfg.Logger.Warn("reactor pull", "consumer", what, "err", err)
					_ = sleepUntil(ctx, time.Now().Add(backoff))
					backoff = min(2*backoff, 5*time.Second)
				}
				break
			}
			backoff = 100 * time.Millisecond
			r.take(ctx, msg, what, fn)
		}
		stop()
		it.Stop()
	}
}

// take runs fn on one event and settles its message.
func (r *Reactor) take(ctx context.Context, msg jetstream.Msg, what string, fn func(context.Context, events.Recorded) error) {
	if ctx.Err() != nil {
		_ = msg.Nak()
		return
	}
	meta, err := msg.Metadata()
	if err != nil {
		_ = msg.Nak()
		return
	}
	rec, err := events.Decode(events.StreamQueue, msg.Subject(), meta.Sequence.Stream, msg.Data())
	if err == nil {
		err = r.q.store.Resolve(ctx, &rec)
	}
	if err != nil {
		r.cfg.Logger.Warn("reactor: not an event", "consumer", what, "subject", msg.Subject(), "err", err)
		_ = msg.Term()
		return
	}
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	err = fn(fctx, rec)
	cancel()
	if err != nil {
		r.cfg.Logger.Warn("reactor: will try again", "consumer", what, "subject", msg.Subject(), "err", err)
		_ = msg.NakWithDelay(time.Second)
		return
	}
	_ = msg.Ack()
}

// resolve takes up the end of a task with dependants.
func (r *Reactor) resolve(ctx context.Context, rec events.Recorded) error {
	return r.q.ResolveDependants(ctx, rec.AggregateID)
}

// tick takes up a schedule's tick.
func (r *Reactor) tick(ctx context.Context, rec events.Recorded) error {
	var p TickPayload
	if err := rec.DecodePayload(&p); err != nil {
		return nil // not a tick Trellis armed: nothing to do
	}
	_, err := r.q.TakeTick(ctx, rec.AggregateID, p)
	return err
}

// errNothing tells a dependant's decision that it has nothing to do.
var errNothing = errors.New("nothing to do")

// ResolveDependants brings the dependants of a task that ended up to date
// with it: done, each dependant still waiting for it learns its summary
// (and is queued when it was the last); failed, dead or cancelled, each is
// cancelled with the reason. A task that is not ended (retried meanwhile)
// changes nothing.
func (q *Handler) ResolveDependants(ctx context.Context, taskID string) error {
	st, err := q.loadState(ctx, taskID)
	if trellis.ErrorCode(err) == trellis.CodeNotFound {
		return nil
	}
	if err != nil {
		return err
	}
	p := st.Value
	if p == nil {
		return nil // pruned: its dependants were resolved before it could be
	}
	if p.Status != trellis.StatusDone && !p.Status.Ended() {
		return nil
	}
	for _, id := range p.Dependants {
		dst, err := q.loadState(ctx, id)
		if trellis.ErrorCode(err) == trellis.CodeNotFound {
			continue
		}
		if err != nil {
			return err
		}
		next, err := q.decide(ctx, dst, "trellis", func(d *trellis.Task) (decision, error) {
			if d.Status != trellis.StatusWaiting || !slices.Contains(d.WaitingFor, p.TaskID) {
				return decision{}, errNothing
			}
			if p.Status == trellis.StatusDone {
				typ := PrerequisiteDone
				if len(d.WaitingFor) == 1 {
					typ = Ready
				}
				return decision{typ, PrerequisitePayload{Prerequisite: summary(p)}}, nil
			}
			return decision{Cancelled, CancelPayload{Reason: endReason(p)}}, nil
		})
		if errors.Is(err, errNothing) {
			continue
		}
		if err != nil {
			return fmt.Errorf("dependant %s of %s: %w", id, taskID, err)
		}
		if next.Value.Status.Terminal() {
			q.tasks.Forget(id)
		}
	}
	return nil
}

// endReason says why a prerequisite will never be done.
func endReason(p *trellis.Task) string {
	why := ""
	switch {
	case p.Cancellation != nil && p.Cancellation.Reason != "":
		why = ": " + p.Cancellation.Reason
	case p.Checkpoint != nil && p.Checkpoint.Error != "":
		why = ": " + clip(p.Checkpoint.Error)
	}
	return fmt.Sprintf("prerequisite %s ended %s%s", p.TaskID, p.Status, why)
}
