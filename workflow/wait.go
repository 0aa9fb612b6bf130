package workflow

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"
)

// Sleep is a durable sleep: the run records a timer and leaves its worker
// slot; a JetStream message schedule (the task queue's delayed task)
// dispatches it again when the timer is due, on any pool, after any
// restart. name must be stable.
func Sleep(c *Context, name string, d time.Duration) error {
	e, ok := c.next(KindSleep, name)
	if ok && e.Status != EntryPending {
		return nil
	}
	if !ok {
		if err := c.checkCancel(); err != nil {
			c.pos--
			return err
		}
		until := c.e.cfg.Now().Add(d).UTC()
		e.Until = &until
		c.append(TimerSet, EntryPayload{Pos: e.Pos, Name: name, Until: &until})
	}
	if err := c.checkCancel(); err != nil {
		return err
	}
	if !c.e.cfg.Now().Before(*e.Until) {
		c.append(TimerFired, EntryPayload{Pos: e.Pos})
		return nil
	}
	c.wakeAt(c.entryKey("timer", e.Pos), *e.Until)
	c.suspend(fmt.Sprintf("sleeping until %s (%s)", e.Until.Format(time.RFC3339), name))
	return nil
}

// ErrTimeout is returned by Wait when no signal came in time.
var ErrTimeout = errors.New("timed out waiting for the signal")

// Wait waits durably for the next signal named name (sent with workflow
// signal, over HTTP, MCP or NATS) and returns its data; a timeout of 0
// waits for ever, else ErrTimeout is returned when it passes first. The
// run leaves its worker slot while it waits.
func Wait(c *Context, name string, timeout time.Duration) (json.RawMessage, error) {
	e, ok := c.next(KindSignal, name)
	if ok && e.Status != EntryPending {
		if e.TimedOut {
			return nil, ErrTimeout
		}
		return e.Result, nil
	}
	if !ok {
		if err := c.checkCancel(); err != nil {
			c.pos--
			return nil, err
		}
		p := EntryPayload{Pos: e.Pos, Name: name}
		if timeout > 0 {
			until := c.e.cfg.Now().Add(timeout).UTC()
			p.Until, e.Until = &until, &until
		}
		c.append(SignalWaiting, p)
	}
	if err := c.checkCancel(); err != nil {
		return nil, err
	}
	if s, ok := c.st.Value.nextSignal(name); ok {
		c.append(SignalConsumed, EntryPayload{Pos: e.Pos, Signal: s.Index, Result: s.Data})
		return s.Data, nil
	}
	if e.Until != nil {
		if !c.e.cfg.Now().Before(*e.Until) {
			c.append(SignalConsumed, EntryPayload{Pos: e.Pos, TimedOut: true})
			return nil, ErrTimeout
		}
		c.wakeAt(c.entryKey("signal-timeout", e.Pos), *e.Until)
	}
	c.suspend("waiting for signal " + name)
	return nil, nil
}

// WaitFor is Wait decoding the signal's data into T.
func WaitFor[T any](c *Context, name string, timeout time.Duration) (T, error) {
	var v T
	raw, err := Wait(c, name, timeout)
	if err != nil {
		return v, err
	}
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &v); err != nil {
			return v, fmt.Errorf("signal %q: data does not decode: %w", name, err)
		}
	}
	return v, nil
}

// entryKey names the wake of the entry at pos: stable while the entry is
// open, new when a retry records the position again.
func (c *Context) entryKey(what string, pos int) string {
	t := c.st.Value.Journal[pos].Time
	return what + "-" + strconv.Itoa(pos) + "-" + strconv.FormatInt(t.UnixNano(), 36)
}

// wakeAt dispatches an activation of the run at t (idempotent per key).
func (c *Context) wakeAt(key string, t time.Time) {
	if err := c.e.wake(c.ctx0(), c.st.Value, key, wakeOpts{at: t}); err != nil {
		c.fail(err)
	}
}
