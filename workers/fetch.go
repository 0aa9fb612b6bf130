package workers

import (
	"context"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/trellis/trellis/taskqueue"
)

// fetchAhead bounds how many dispatches a pull asks for beyond the free
// slots (Concurrency when larger): each round trip to the server then
// serves several slots. The fetcher starts at Concurrency and adapts
// (see fetch).
const fetchAhead = 32

// lane is the fetcher's view of one priority lane (a claim consumer).
type lane struct {
	c jetstream.Consumer
	// buf holds dispatches fetched ahead of a free slot, oldest first.
	buf []fetched
	// waiting: a waiting pull is outstanding, sent when the lane was
	// empty; the server hands it the lane's next dispatch.
	waiting bool
	// pulling: a pull for the dispatches the lane holds now is
	// outstanding (see Pool.fetch).
	pulling bool
	// more: the lane may hold dispatches now (its last pull was filled,
	// or a waiting pull just returned one); else it was empty when last
	// asked and its waiting pull will tell.
	more bool
	// backoff is the wait after the lane's last failed pull (0 after an
	// answer); its next waiting pull is sent at retryAt.
	backoff time.Duration
	retryAt time.Time
}

// maxFetchBackoff bounds the wait between two pulls of a lane that
// fail (its consumer without a leader during an election, NATS
// reconnecting): the next pull is the probe that finds JetStream healthy
// again, so a lane takes dispatches again at most this long after.
const maxFetchBackoff = time.Second

// fetchBackoff is the wait after a failed pull that followed one of
// prev: 100 ms doubling to maxFetchBackoff.
func fetchBackoff(prev time.Duration) time.Duration {
	if prev <= 0 {
		return 100 * time.Millisecond
	}
	return min(2*prev, maxFetchBackoff)
}

// failed records a failed pull: the lane's next waiting pull waits.
func (l *lane) failed() {
	l.backoff = fetchBackoff(l.backoff)
	l.retryAt = time.Now().Add(l.backoff)
}

// fetched is a dispatch the pool holds but has not started.
type fetched struct {
	msg jetstream.Msg
	at  time.Time
	// read is the dispatch's read ahead of its slot (nil: none; see
	// Pool.readAhead).
	read *readAhead
}

// readAhead is a dispatch's read (taskqueue.Handler.ReadDispatch) running
// or done: r is set once done is closed.
type readAhead struct {
	done chan struct{}
	r    *taskqueue.DispatchRead
}

// readsAhead reports whether the pool reads dispatches ahead of its
// slots and pulls a lane again before its buffer is empty: only with
// fewer slots than fetchAhead. With more, the slots' own reads, made
// together, fill each request; measured with trellis bench workers
// (--add-batch 1000, same sitting, interleaved), reading ahead gave
// 1.3x at 8 handlers, the same at 128, and 0.88x at 2,000 (dispatches
// read ahead waited for a slot, and the pulls ahead added round trips).
func (p *Pool) readsAhead() bool {
	return p.queue != nil && p.cfg.ClaimWindow > 0 && p.cfg.Concurrency < fetchAhead
}

// readBuffered starts reading the dispatches of a lane's buffer that are
// not read yet (a pool that reads ahead buffers fewer than 2 ×
// fetchAhead).
func (p *Pool) readBuffered(ctx context.Context, l *lane) {
	if !p.readsAhead() {
		return
	}
	for i := range l.buf {
		if l.buf[i].read == nil {
			l.buf[i] = p.readAhead(ctx, l.buf[i])
		}
	}
}

// readAhead starts reading a fetched dispatch before a slot takes it, so
// that the dispatches of a buffer read the log together (one
// request for their tasks' last events) while the slots run the ones
// before them. Only a pool that reads ahead does (see readsAhead).
func (p *Pool) readAhead(ctx context.Context, f fetched) fetched {
	if !p.readsAhead() {
		return f
	}
	ra := &readAhead{done: make(chan struct{})}
	f.read = ra
	go func() {
		defer close(ra.done)
		ra.r = p.queue.ReadDispatch(ctx, f.msg)
	}()
	return f
}

// arrival is what a pull returns: the dispatches it fetched (none: a
// waiting pull expired, or the lane is empty), or the error that failed
// it. A pull for the lane's dispatches (pulled) asked for want; else it
// is the lane's waiting pull.
type arrival struct {
	lane   int
	got    []fetched
	pulled bool
	want   int
	err    error
}

// fetch pulls dispatches for the free slots until ctx ends, handing each
// to a slot of its own, best priority lane first.
//
// A lane that may hold dispatches is pulled for the free slots and some
// more (one round trip serves several slots; what is fetched ahead waits
// in the lane's buffer, unclaimed, at most a quarter of the lease, then
// is given back for another pool). A pool that reads ahead (fewer slots
// than fetchAhead: see readsAhead) reads each dispatch as it is fetched
// (see readAhead), and pulls a lane again,
// to refill the same bound, while half of it is still buffered, so its
// slots rarely wait for a round trip. How many more
// adapts: twice as many, up to max(Concurrency, fetchAhead), when the
// slots drained every buffer, half as many when a dispatch had to be
// given back (slow handlers: a pool then holds little that others could
// run). A lane found empty keeps one waiting pull outstanding, even
// while no slot is free, so a dispatch arriving on it, an urgent one
// say, is known at once and taken by the next free slot before any
// dispatch of a lower lane; empty lanes cost no round trip.
func (p *Pool) fetch(ctx, work context.Context, consumers []jetstream.Consumer, wg *sync.WaitGroup) {
	free := make(chan int, p.cfg.Concurrency)
	for slot := 0; slot < p.cfg.Concurrency; slot++ {
		free <- slot
	}
	lanes := make([]*lane, len(consumers))
	for i, c := range consumers {
		lanes[i] = &lane{c: c, more: true}
	}
	// Each lane has at most one waiting pull and one pull for its
	// dispatches outstanding.
	arrivals := make(chan arrival, 2*len(lanes))
	var pulls sync.WaitGroup
	defer func() {
		// Give back what was fetched ahead, and what the outstanding
		// pulls still get (they end within FetchWait).
		for _, l := range lanes {
			for _, f := range l.buf {
				p.giveBack(f)
			}
		}
		go func() { pulls.Wait(); close(arrivals) }()
		for a := range arrivals {
			for _, f := range a.got {
				p.giveBack(f)
			}
		}
		p.givingBack.Wait()
	}()
	var slots []int
	run := func(f fetched) {
		slot := slots[len(slots)-1]
		slots = slots[:len(slots)-1]
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { free <- slot }()
			p.handle(work, f, p.cfg.Worker+"/"+strconv.Itoa(slot), wg)
		}()
	}
	// pull asks lane i for up to want dispatches, without waiting for
	// more to arrive; they come back as an arrival.
	pull := func(i int, want int) {
		want = max(want, 1)
		l := lanes[i]
		l.pulling = true
		pulls.Add(1)
		go func() {
			defer pulls.Done()
			a := arrival{lane: i, pulled: true, want: want}
			batch, err := l.c.FetchNoWait(want)
			if err == nil {
				for msg := range batch.Messages() {
					a.got = append(a.got, fetched{msg: msg, at: time.Now()})
				}
				err = batch.Error()
			}
			if len(a.got) == 0 {
				a.err = err
			}
			arrivals <- a
		}()
	}
	maxAhead := max(p.cfg.Concurrency, fetchAhead)
	ahead := p.cfg.Concurrency
	// retry wakes the loop when a lane that failed may pull again.
	retry := time.NewTimer(time.Hour)
	retry.Stop()
	defer retry.Stop()
	staleEvery := func() time.Duration { return max(50*time.Millisecond, min(time.Second, p.lease()/8)) }
	stale := time.NewTicker(staleEvery())
	defer stale.Stop()
	for ctx.Err() == nil {
		select {
		case s := <-free:
			slots = append(slots, s)
		case a := <-arrivals:
			l := lanes[a.lane]
			if a.pulled {
				l.pulling = false
			} else {
				l.waiting = false
			}
			switch {
			case a.err != nil:
				// NATS unreachable, the server restarting, a consumer
				// moving: only this lane waits, and at most
				// maxFetchBackoff (its waiting pull tries again); the
				// other lanes and the free slots go on.
				l.failed()
				l.more = false
				p.log.Warn("fetch", "lane", a.lane+1, "err", a.err, "retry_in", l.backoff)
			case a.pulled:
				l.backoff = 0
				l.buf = append(l.buf, a.got...)
				l.more = len(a.got) == a.want
				p.readBuffered(work, l)
			case len(a.got) > 0:
				l.backoff = 0
				l.buf = append(l.buf, a.got...)
				l.more = true
				p.readBuffered(work, l)
			default:
				l.backoff = 0 // answered: nothing there
			}
		case <-retry.C:
		case <-stale.C:
			if p.giveBackStale(lanes) > 0 {
				ahead /= 2
			}
			stale.Reset(staleEvery()) // the queue's lease may have changed
		case <-ctx.Done():
			return
		}
	more:
		for {
			select {
			case s := <-free:
				slots = append(slots, s)
			default:
				break more
			}
		}
		// Free slots take the best lane's dispatches: what is buffered,
		// else what a lane that may hold some returns next.
		for len(slots) > 0 && ctx.Err() == nil {
			best := bestLane(lanes)
			if best < 0 {
				break
			}
			l := lanes[best]
			if len(l.buf) == 0 {
				if !l.pulling {
					if buffered(lanes) == 0 {
						ahead = min(2*ahead+1, maxAhead) // the slots drained every buffer
					}
					pull(best, len(slots)+ahead)
				}
				break // the slots wait for what it returns
			}
			f := l.buf[0]
			l.buf = l.buf[1:]
			p.readBuffered(work, l)
			if p.stale(f) {
				// Waited for a slot longer than a quarter of the lease (a
				// process stopped for a while, say): given back, or
				// dropped, as giveBackStale would have.
				p.giveBack(f)
				continue
			}
			run(f)
		}
		// The lane the slots take from is pulled again, up to what it
		// fetches ahead, while half of that is still buffered (a pool
		// that reads ahead: see readsAhead): the lane never holds more
		// than the pool's slots and that.
		if best := bestLane(lanes); best >= 0 && ctx.Err() == nil {
			if l := lanes[best]; p.readsAhead() && ahead > 0 && l.more && !l.pulling && len(l.buf) <= ahead/2 {
				pull(best, ahead-len(l.buf))
			}
		}
		// Every lane found empty waits for its next dispatch; a lane
		// whose last pull failed, once its backoff has passed.
		var wake time.Time
		for i, l := range lanes {
			if l.waiting || l.pulling || l.more || len(l.buf) > 0 || ctx.Err() != nil {
				continue
			}
			if time.Now().Before(l.retryAt) {
				if wake.IsZero() || l.retryAt.Before(wake) {
					wake = l.retryAt
				}
				continue
			}
			l.waiting = true
			pulls.Add(1)
			go func() {
				defer pulls.Done()
				batch, err := l.c.Fetch(1, jetstream.FetchMaxWait(p.cfg.FetchWait))
				if err != nil {
					arrivals <- arrival{lane: i, err: err}
					return
				}
				var got []fetched
				for msg := range batch.Messages() {
					got = append(got, fetched{msg: msg, at: time.Now()})
				}
				if len(got) == 0 && batch.Error() != nil {
					// No responders (the consumer has no leader), a
					// leadership change...: not an empty lane. An expired
					// pull is no error.
					arrivals <- arrival{lane: i, err: batch.Error()}
					return
				}
				arrivals <- arrival{lane: i, got: got}
			}()
		}
		if !wake.IsZero() {
			retry.Reset(time.Until(wake))
		}
	}
}

// giveBackStale gives back (see giveBack) the dispatches fetched ahead
// that waited a quarter of the lease for a slot (their lease would run out
// unheld) and returns how many.
func (p *Pool) giveBackStale(lanes []*lane) int {
	n := 0
	for _, l := range lanes {
		keep := l.buf[:0]
		for _, f := range l.buf {
			if p.stale(f) {
				p.giveBack(f)
				n++
				continue
			}
			keep = append(keep, f)
		}
		l.buf = keep
	}
	return n
}

// stale reports whether a dispatch fetched ahead waited for a slot longer
// than a quarter of the lease: it is given back rather than started.
func (p *Pool) stale(f fetched) bool { return time.Since(f.at) > p.lease()/4 }

// current reports whether the delivery of a dispatch fetched at may still
// be the pool's own: its lease (counted by the server from the delivery,
// before at) has at least a quarter left.
func (p *Pool) current(at time.Time) bool { return time.Since(at) < p.lease()*3/4 }

// giveBack hands a dispatch the pool fetched but will not start back to
// the queue at once (Nak) while its delivery is still the pool's own. One
// held so long that its lease may have passed (the process was stopped,
// the machine suspended) is dropped untouched: JetStream may have
// delivered it again to another claimant, which may hold the task with it
// now, and a nak (or an acknowledgement), which JetStream applies by the
// dispatch's stream sequence whatever delivery it names, would cut that
// claimant's lease short. A dispatch dropped while still pending comes
// back when its lease ends. A dispatch whose read ahead settled it (it
// names no task) is left as the read left it; one whose read is still
// out (a store that stalls) is given back once it ends, without holding
// up the fetcher (fetch waits for those as it stops).
func (p *Pool) giveBack(f fetched) {
	if f.read != nil {
		select {
		case <-f.read.done:
		default:
			p.givingBack.Add(1)
			go func() {
				defer p.givingBack.Done()
				<-f.read.done
				p.giveBack(f)
			}()
			return
		}
		if f.read.r.Settled() {
			return
		}
	}
	if p.current(f.at) {
		_ = f.msg.Nak()
		return
	}
	p.log.Warn("dispatch fetched ahead and held past its lease: dropped, left to its current holder",
		"subject", f.msg.Subject(), "held", time.Since(f.at).Round(time.Millisecond))
}

// bestLane returns the index of the best lane that holds dispatches or
// may (-1: none).
func bestLane(lanes []*lane) int {
	for i, l := range lanes {
		if len(l.buf) > 0 || l.more {
			return i
		}
	}
	return -1
}

// buffered counts the dispatches fetched ahead.
func buffered(lanes []*lane) int {
	n := 0
	for _, l := range lanes {
		n += len(l.buf)
	}
	return n
}
