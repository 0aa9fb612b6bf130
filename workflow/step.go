package workflow

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime/debug"
	"sync"
	"time"
)

// StepOptions tune a step. The zero value runs the step once, without a
// timeout.
type StepOptions struct {
	// Attempts is how often the step runs before its error is final
	// (default 1).
	Attempts int
	// Backoff is the wait before attempt n+1 after attempt n failed
	// (default: 100 ms doubling, capped at 30 s, with jitter).
	Backoff func(attempt int) time.Duration
	// Timeout bounds each attempt (0: none): the attempt's context ends.
	Timeout time.Duration
	// Compensate undoes the step: it runs, journaled as its own step
	// "compensate:<name>", when the run later fails or is cancelled, in
	// reverse order of the steps.
	Compensate func(ctx context.Context) error
}

// DefaultStepBackoff is the default wait between a step's attempts.
func DefaultStepBackoff(attempt int) time.Duration {
	d := 100 * time.Millisecond << min(attempt-1, 9)
	d = min(d, 30*time.Second)
	return d/2 + time.Duration(rand.Int64N(int64(d/2)+1))
}

// StepError is a step's final error as recorded: the workflow's code gets
// it from Step on the run and on every replay.
type StepError struct {
	Step     string
	Message  string
	Attempts int
}

func (e *StepError) Error() string {
	return fmt.Sprintf("step %q failed after %d attempt(s): %s", e.Step, e.Attempts, e.Message)
}

// Step runs fn once and journals its result: on every later activation of
// the run the recorded result (or final error, as a *StepError) is
// returned without running fn again. name must be stable across code
// versions. fn runs at least once: when the process dies while fn runs,
// nothing is recorded and fn runs again on the next activation.
func Step[T any](c *Context, name string, fn func(ctx context.Context) (T, error), opts ...StepOptions) (T, error) {
	var o StepOptions
	if len(opts) > 0 {
		o = opts[0]
	}
	var zero T
	raw, err := c.step(name, o, func(ctx context.Context) (json.RawMessage, error) {
		v, err := fn(ctx)
		if err != nil {
			return nil, err
		}
		return json.Marshal(v)
	})
	if err != nil {
		return zero, err
	}
	var v T
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &v); err != nil {
			return zero, fmt.Errorf("step %q: decode the recorded result: %w", name, err)
		}
	}
	return v, nil
}

// step is Step without types.
func (c *Context) step(name string, o StepOptions, fn func(ctx context.Context) (json.RawMessage, error)) (json.RawMessage, error) {
	if name == "" {
		panic("workflow: a step needs a name")
	}
	e, ok := c.next(KindStep, name)
	if ok {
		c.addCompensation(name, e.Status == EntryCompleted, o)
		if e.Status == EntryFailed {
			return nil, &StepError{Step: name, Message: e.Error, Attempts: e.Attempts}
		}
		return e.Result, nil
	}
	if err := c.checkCancel(); err != nil {
		c.pos--
		return nil, err
	}
	began := time.Now()
	res, attempts, err := c.attempts(name, o, fn)
	if errors.Is(err, ErrCancelled) {
		c.pos--
		return nil, err
	}
	p := EntryPayload{Pos: e.Pos, Name: name, Attempts: attempts, TookMs: tookMs(began)}
	if err != nil {
		p.Error = err.Error()
		c.append(StepFailed, p)
		return nil, &StepError{Step: name, Message: p.Error, Attempts: attempts}
	}
	p.Result = res
	c.hold(p)
	c.addCompensation(name, true, o)
	return res, nil
}

func (c *Context) addCompensation(name string, done bool, o StepOptions) {
	if done && o.Compensate != nil {
		c.comps = append(c.comps, compensation{name: name, fn: o.Compensate})
	}
}

// attempts runs fn up to o.Attempts times; a panic is a failed attempt.
func (c *Context) attempts(name string, o StepOptions, fn func(ctx context.Context) (json.RawMessage, error)) (json.RawMessage, int, error) {
	n := max(o.Attempts, 1)
	backoff := o.Backoff
	if backoff == nil {
		backoff = DefaultStepBackoff
	}
	var err error
	for a := 1; a <= n; a++ {
		var res json.RawMessage
		res, err = runAttempt(c.stepCtx(), o.Timeout, fn)
		if err == nil {
			return res, a, nil
		}
		c.drained()
		if c.Cancelled() {
			return nil, a, ErrCancelled
		}
		if a < n {
			t := time.NewTimer(backoff(a))
			select {
			case <-t.C:
			case <-c.stepCtx().Done():
				t.Stop()
				c.drained()
				return nil, a, ErrCancelled
			}
		}
	}
	return nil, n, err
}

// runAttempt runs one attempt, turning a panic into an error.
func runAttempt(ctx context.Context, timeout time.Duration, fn func(ctx context.Context) (json.RawMessage, error)) (res json.RawMessage, err error) {
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic: %v\n%s", p, clipStack(debug.Stack()))
		}
	}()
	res, err = fn(ctx)
	if err == nil && timeout > 0 && ctx.Err() != nil {
		err = fmt.Errorf("timed out after %s: %w", timeout, ctx.Err())
	}
	return res, err
}

// tookMs is the time since began in milliseconds, to the microsecond.
func tookMs(began time.Time) float64 {
	return float64(time.Since(began).Microseconds()) / 1000
}

func clipStack(b []byte) string {
	if len(b) > 2048 {
		b = b[:2048]
	}
	return string(b)
}

var errBranchLeft = errors.New("branch left")

// All runs several steps at once (fan-out) and waits for them all
// (fan-in): branch i is the step "<name>[i]". Recorded branches are not
// run again. It returns the results in order and the first error.
func All[T any](c *Context, name string, fns []func(ctx context.Context) (T, error), opts ...StepOptions) ([]T, error) {
	var o StepOptions
	if len(opts) > 0 {
		o = opts[0]
	}
	out := make([]T, len(fns))
	type result struct {
		raw      json.RawMessage
		attempts int
		err      error
		took     float64
	}
	results := make([]result, len(fns))
	entries := make([]Entry, len(fns))
	recorded := make([]bool, len(fns))
	for i := range fns {
		entries[i], recorded[i] = c.next(KindStep, fmt.Sprintf("%s[%d]", name, i))
	}
	if err := c.checkCancel(); err != nil {
		for i := range fns {
			if !recorded[i] {
				c.pos = entries[i].Pos
				return nil, err
			}
		}
	}
	var wg sync.WaitGroup
	began := time.Now()
	for i, fn := range fns {
		if recorded[i] {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			finished := false
			defer func() {
				if !finished { // left through runtime.Goexit (the activation stops)
					results[i] = result{err: errBranchLeft}
				}
			}()
			raw, a, err := c.attempts(entries[i].Name, o, func(ctx context.Context) (json.RawMessage, error) {
				v, err := fn(ctx)
				if err != nil {
					return nil, err
				}
				return json.Marshal(v)
			})
			results[i] = result{raw, a, err, tookMs(began)}
			finished = true
		}()
	}
	wg.Wait()
	for _, r := range results {
		if r.err == errBranchLeft {
			c.mu.Lock()
			why := c.why
			c.mu.Unlock()
			c.leave(why)
		}
	}
	var first error
	for i := range fns {
		en := entries[i]
		var raw json.RawMessage
		var err error
		if recorded[i] {
			raw = en.Result
			if en.Status == EntryFailed {
				err = &StepError{Step: en.Name, Message: en.Error, Attempts: en.Attempts}
			}
		} else {
			r := results[i]
			if errors.Is(r.err, ErrCancelled) {
				// Nothing more is recorded: the branches from here run
				// again if the run is ever retried.
				c.pos = en.Pos
				return nil, ErrCancelled
			}
			p := EntryPayload{Pos: en.Pos, Name: en.Name, Attempts: r.attempts, TookMs: r.took}
			if r.err != nil {
				p.Error = r.err.Error()
				c.append(StepFailed, p)
				err = &StepError{Step: en.Name, Message: p.Error, Attempts: r.attempts}
			} else {
				p.Result = r.raw
				c.append(StepCompleted, p)
				raw = r.raw
			}
		}
		c.addCompensation(en.Name, err == nil, o)
		if err != nil {
			if first == nil {
				first = err
			}
			continue
		}
		if len(raw) > 0 {
			if err := json.Unmarshal(raw, &out[i]); err != nil && first == nil {
				first = fmt.Errorf("step %q: decode the recorded result: %w", en.Name, err)
			}
		}
	}
	return out, first
}
