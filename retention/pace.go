package retention

import (
	"context"
	"sync"
	"time"
)

// MaxRemoveRate bounds Options.RemoveRate (messages per second): more is
// no pace at all on any disk.
const MaxRemoveRate = 1_000_000

// pacer spaces removals evenly at a rate (messages removed per second);
// a nil pacer does not wait. Each removal (a sequence, or a
// subject-filtered purge of many, which takes a slot per message: see
// purgeSubjects) is a synced write on
// the stream the pools append to, so an unpaced prune takes the disk's
// syncs from them (docs/retention.md, Figures). Each removal takes a slot
// before it is sent; one that found its sequence removed before (each
// prune first walks the last record again) wrote nothing and gives the
// slot back. It is safe for concurrent use.
type pacer struct {
	every time.Duration
	mu    sync.Mutex
	next  time.Time
	taken int // slots taken and not given back
}

// newPacer returns a pacer of rate messages per second (nil for 0: no
// pace).
func newPacer(rate int) *pacer {
	if rate <= 0 {
		return nil
	}
	return &pacer{every: time.Second / time.Duration(rate)}
}

// wait takes the next slot and returns when it is due, or with ctx's
// error. A pacer that fell behind (the store was slower than the rate)
// does not catch up with a burst.
func (p *pacer) wait(ctx context.Context) error {
	return p.waitN(ctx, 1)
}

// waitN takes the next n slots, for a removal of n messages in one write
// (a purge: see purgeSubjects), and returns when the first is due, or
// with ctx's error: the removal after it waits for the n slots to pass,
// so the rate holds in messages a second whatever removes them.
func (p *pacer) waitN(ctx context.Context, n int) error {
	if p == nil {
		return ctx.Err()
	}
	p.mu.Lock()
	now := time.Now()
	if p.next.Before(now) {
		p.next = now
	}
	d := p.next.Sub(now)
	p.next = p.next.Add(time.Duration(n) * p.every)
	p.taken += n
	p.mu.Unlock()
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// giveBack returns the last slot taken: the removal it was for removed
// nothing. The next removal may then go a slot earlier.
func (p *pacer) giveBack() {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.next = p.next.Add(-p.every)
	p.taken--
}
