package retention

import (
	"context"
	"time"
)

// MaxRemoveRate bounds Options.RemoveRate (removals per second): more is
// no pace at all on any disk.
const MaxRemoveRate = 1_000_000

// pacer spaces removals evenly at a rate (removals per second); a nil
// pacer does not wait. Each removal of a sequence is a synced write on
// the stream the pools append to, so an unpaced prune takes the disk's
// syncs from them (docs/retention.md, Figures).
type pacer struct {
	every time.Duration
	next  time.Time
}

// newPacer returns a pacer of rate removals per second (nil for 0: no
// pace).
func newPacer(rate int) *pacer {
	if rate <= 0 {
		return nil
	}
	return &pacer{every: time.Second / time.Duration(rate)}
}

// wait returns when the next removal is due, or with ctx's error. A
// pacer that fell behind (the store was slower than the rate) does not
// catch up with a burst.
func (p *pacer) wait(ctx context.Context) error {
	if p == nil {
		return ctx.Err()
	}
	now := time.Now()
	if p.next.Before(now) {
		p.next = now
	}
	d := p.next.Sub(now)
	p.next = p.next.Add(p.every)
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
