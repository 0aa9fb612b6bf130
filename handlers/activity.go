package handlers

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/command"
	"github.com/trellis/trellis/events"
	"github.com/trellis/trellis/projections"
)

// activityCatchUp bounds how long an activity read waits for the fold to
// reach the end of the log; past it the read answers with what is folded
// and caught_up false (the first read on a busy log reads a whole hour).
const activityCatchUp = 3 * time.Second

// activityFold is the recent-activity projection, started on first use so
// a server nobody watches pays nothing for it.
type activityFold struct {
	mu   sync.Mutex
	proj *projections.Activity
	run  *projections.Runner
}

// get starts the fold at the window's start on first use.
func (f *activityFold) get(ctx context.Context, s *Service) (*projections.Activity, *projections.Runner, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.run != nil {
		return f.proj, f.run, nil
	}
	start, err := s.store.SeqAtTime(ctx, events.StreamQueue, time.Now().Add(-trellis.ActivityWindow).Add(-time.Nanosecond))
	if err != nil {
		return nil, nil, command.StoreError("queue activity", err)
	}
	proj := projections.NewActivity(start)
	run := projections.NewRunner(s.store, proj, s.cfg.Logger)
	if err := run.Start(ctx); err != nil {
		return nil, nil, command.StoreError("queue activity", err)
	}
	f.proj, f.run = proj, run
	return proj, run, nil
}

// stop ends the fold if it runs.
func (f *activityFold) stop() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.run != nil {
		_ = f.run.Stop()
		f.proj, f.run = nil, nil
	}
}

// Activity returns what the queue did over the last hour, per minute, from
// the log: events by queue and type, claim latency, and per-worker counts
// and rates. It waits a few seconds for the fold to reach the end of the
// log and otherwise answers with caught_up false.
func (s *Service) Activity(ctx context.Context) (*trellis.QueueActivity, error) {
	proj, run, err := s.activity.get(ctx, s)
	if err != nil {
		return nil, err
	}
	caughtUp := true
	wctx, cancel := context.WithTimeout(ctx, activityCatchUp)
	err = run.CatchUp(wctx)
	cancel()
	if err != nil {
		if ctx.Err() != nil || !errors.Is(err, context.DeadlineExceeded) {
			return nil, command.StoreError("queue activity", err)
		}
		caughtUp = false
	}
	snap := proj.Snapshot(time.Now())
	snap.CaughtUp = caughtUp
	return snap, nil
}

// notDerived lists what WorkersView cannot show because the log does not
// hold it.
func notDerived() []string {
	return []string{
		"last heartbeat: a worker pool's heartbeats are acknowledgements (InProgress) of its dispatch message on the claim consumer, not events, so the log has no time for them; a held lease is known to be alive only by its claim and by the absence of a lease_expired event",
		"when a lease will expire: it is renewed by those heartbeats",
		"idle workers: a worker that has not claimed or finished anything in the window caused no event",
	}
}

// Workers returns who holds which task (the claimed tasks on the queue
// board, at most trellis.MaxLeaseHolders, with their lease from the claim
// event) and what each worker did in the activity window.
func (s *Service) Workers(ctx context.Context) (*trellis.WorkersView, error) {
	act, err := s.Activity(ctx)
	if err != nil {
		return nil, err
	}
	list, err := s.List(ctx, trellis.ListRequest{Status: trellis.StatusClaimed, Limit: trellis.MaxLeaseHolders})
	if err != nil {
		return nil, err
	}
	byName := map[string]*trellis.WorkerActivity{}
	out := &trellis.WorkersView{Start: act.Start, Truncated: list.NextCursor != "", NotDerived: notDerived()}
	for i := range act.Workers {
		w := act.Workers[i]
		byName[w.Worker] = &w
	}
	leases := map[string]float64{}
	for _, row := range list.Tasks {
		h := trellis.LeaseHolder{TaskID: row.TaskID, Queue: row.Queue, Worker: row.ClaimedBy, Objective: row.Objective, Attempt: row.Attempts}
		if t, err := s.board.Task(row.TaskID); err == nil && t != nil {
			h.ClaimedAt = t.ClaimedAt
			if t.Lease != nil {
				h.Leased, h.DispatchSeq, h.Delivery = true, t.Lease.DispatchSeq, t.Lease.Delivery
				h.ExpiresAt = t.Lease.ExpiresAt
				h.LeaseSeconds = float64(t.Lease.LeaseMS) / 1000
			}
		}
		if h.Leased && h.ExpiresAt == nil {
			lease, ok := leases[row.Queue]
			if !ok {
				if c, err := s.Controls(ctx, row.Queue); err == nil {
					lease = c.LeaseSeconds
				}
				leases[row.Queue] = lease
			}
			h.LeaseSeconds = lease
		}
		w := byName[h.Worker]
		if w == nil {
			w = &trellis.WorkerActivity{Worker: h.Worker, Queues: []string{}, Events: map[string]int{}}
			byName[h.Worker] = w
		}
		if !slices.Contains(w.Queues, h.Queue) {
			w.Queues = append(w.Queues, h.Queue)
			slices.Sort(w.Queues)
		}
		w.Held = append(w.Held, h)
		out.Holders++
	}
	out.Workers = make([]trellis.WorkerActivity, 0, len(byName))
	for _, w := range byName {
		out.Workers = append(out.Workers, *w)
	}
	slices.SortFunc(out.Workers, func(x, y trellis.WorkerActivity) int {
		switch {
		case x.Worker < y.Worker:
			return -1
		case x.Worker > y.Worker:
			return 1
		}
		return 0
	})
	return out, nil
}
