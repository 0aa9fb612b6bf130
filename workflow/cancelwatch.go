package workflow

import (
	"sync"

	"github.com/nats-io/nats.go"
)

// cancelWatch hands cancel requests to the activations running in this
// process: one subscription per engine on every run's cancel_requested
// subject (the stream's events are also delivered to plain subscribers),
// instead of a subscription per activation, whose subscribe and
// unsubscribe cost the server a change of its subject index and the
// client a goroutine on every activation.
type cancelWatch struct {
	once   sync.Once
	err    error
	mu     sync.Mutex
	active map[string]map[*Context]func()
}

// watchCancel calls cancel when a cancel request for runID arrives while
// the activation c runs; the returned function stops watching. The error
// tells that the subscription could not be made (the activation then
// sees a cancel request when it next reads the run).
func (e *Engine) watchCancel(runID string, c *Context, cancel func()) (func(), error) {
	w := &e.cancels
	w.once.Do(func() {
		w.active = map[string]map[*Context]func(){}
		_, w.err = e.store.Conn().Subscribe(RunSubject("*", CancelRequested), func(m *nats.Msg) {
			id, ok := runIDOf(m.Subject)
			if !ok {
				return
			}
			w.mu.Lock()
			fns := make([]func(), 0, len(w.active[id]))
			for _, fn := range w.active[id] {
				fns = append(fns, fn)
			}
			w.mu.Unlock()
			for _, fn := range fns {
				fn()
			}
		})
	})
	if w.err != nil {
		return func() {}, w.err
	}
	w.mu.Lock()
	if w.active[runID] == nil {
		w.active[runID] = map[*Context]func(){}
	}
	w.active[runID][c] = cancel
	w.mu.Unlock()
	return func() {
		w.mu.Lock()
		delete(w.active[runID], c)
		if len(w.active[runID]) == 0 {
			delete(w.active, runID)
		}
		w.mu.Unlock()
	}, nil
}
