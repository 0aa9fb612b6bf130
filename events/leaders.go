package events

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/nats-io/nats.go"
)

// leaderElectedPrefix is the subject of JetStream's advisory that a
// replicated stream elected a leader (the stream's name follows).
const leaderElectedPrefix = "$JS.EVENT.ADVISORY.STREAM.LEADER_ELECTED."

// errNewLeader ends an append's attempt when its stream elects a leader:
// the attempt went to the old one, which may be silent (cut off, paused),
// and the new one takes the same message at once.
var errNewLeader = errors.New("the stream elected a new leader during the attempt")

// leaderWatch hears JetStream's stream leader elections on the store's
// connection, so that an append's attempt sent to a silent old leader is
// sent again as soon as a new one is elected, not after AttemptTimeout:
// after an isolated stream leader the first completions came about 1.2 s
// (up to AttemptTimeout) after the election (the chaos harness's
// isolate-leader runs).
type leaderWatch struct {
	once sync.Once
	mu   sync.Mutex
	// terms holds per stream a context cancelled at its next election.
	terms map[string]*term
	// sub is the advisories' subscription (nil before first use, when
	// refused, and after close).
	sub *nats.Subscription
	// closed: the store was closed; no subscription is made any more.
	closed bool
}

type term struct {
	ctx    context.Context
	cancel context.CancelCauseFunc
}

// termOf is stream's current term: a context cancelled (cause
// errNewLeader) when the stream elects a leader. The advisories are
// subscribed on first use; without them (no permission, a server without
// clustering) a term simply never ends and attempts end at
// AttemptTimeout.
func (s *Store) termOf(stream string) context.Context {
	w := &s.leaders
	w.once.Do(func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		if w.closed {
			return
		}
		w.sub, _ = s.nc.Subscribe(leaderElectedPrefix+"*", func(m *nats.Msg) {
			name := strings.TrimPrefix(m.Subject, leaderElectedPrefix)
			w.mu.Lock()
			if t := w.terms[name]; t != nil {
				t.cancel(errNewLeader)
				delete(w.terms, name)
			}
			w.mu.Unlock()
		})
	})
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.terms == nil {
		w.terms = map[string]*term{}
	}
	t := w.terms[stream]
	if t == nil {
		ctx, cancel := context.WithCancelCause(context.Background())
		t = &term{ctx: ctx, cancel: cancel}
		w.terms[stream] = t
	}
	return t.ctx
}

// attemptContext bounds one attempt of an append to stream: it ends after
// AttemptTimeout, or when the stream elects a new leader (see
// attemptErr).
func (s *Store) attemptContext(ctx context.Context, stream string) (context.Context, context.CancelFunc) {
	actx, cancel := context.WithTimeout(ctx, s.cfg.AttemptTimeout)
	tctx := s.termOf(stream)
	withTerm, cancelTerm := context.WithCancelCause(actx)
	stop := context.AfterFunc(tctx, func() { cancelTerm(errNewLeader) })
	return withTerm, func() { stop(); cancelTerm(nil); cancel() }
}

// attemptErr is what an attempt's error means: ended by a new leader's
// election, it is an unanswered attempt (sent again, its message ids
// making a repeat harmless), not a cancellation.
func attemptErr(actx context.Context, err error) error {
	if errors.Is(err, context.Canceled) && errors.Is(context.Cause(actx), errNewLeader) {
		return fmt.Errorf("%w: %w", nats.ErrTimeout, errNewLeader)
	}
	return err
}

// close unsubscribes from the advisories (and keeps the store from
// subscribing later): attempts then end at AttemptTimeout only. Closing
// again, or after the connection closed, does nothing.
func (w *leaderWatch) close() error {
	w.mu.Lock()
	sub := w.sub
	w.sub, w.closed = nil, true
	w.mu.Unlock()
	if sub == nil {
		return nil
	}
	if err := sub.Unsubscribe(); err != nil && !subscriptionGone(err) {
		return fmt.Errorf("unsubscribe from leader elections: %w", err)
	}
	return nil
}
