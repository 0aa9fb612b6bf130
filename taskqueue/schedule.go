package taskqueue

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/command"
	"github.com/trellis/trellis/events"
)

// Periodic schedules.
//
// A schedule is an aggregate per name (trellis.queue.<queue>._schedule.<name>)
// and a chain of one-shot timers: the schedule's timer (a JetStream message
// schedule on trellis.queue.<queue>._timer.schedule.<name>) makes the
// server publish a "tick" event naming the tick's time onto the
// schedule's subjects at that time, whether or not a Trellis server runs.
// A Trellis server takes each tick up (the durable consumer schedule-ticks,
// shared by every server, so one takes it and another does when that one
// dies before acknowledging) and appends, as one atomic batch: the task of
// the tick, whose id derives from the schedule, its generation and the
// tick time (so a tick taken up twice adds one task: the second batch
// fails its check); the schedule's "fired" event, checked against the
// schedule's last sequence; and the timer of the next tick. The chain
// therefore goes on exactly once per tick, and ticks never pile up: while
// everything is down the one pending tick waits, and when it is taken up
// later than the grace (TickGrace) the ticks since are reported in a
// "ticks_missed" event instead of run, and the next timer is armed from
// now.

// Schedule event types, on trellis.queue.<queue>._schedule.<name>.<type>.
const (
	ScheduleCreated = "created"
	Fired           = "fired"
	TicksMissed     = "ticks_missed"
	ScheduleRemoved = "removed"
	// Tick is published by the server from the schedule's timer.
	Tick = "tick"
)

// ScheduleCreatedPayload is the payload of a schedule's created event.
type ScheduleCreatedPayload struct {
	Queue    string                 `json:"queue"`
	Every    string                 `json:"every,omitempty"`
	Cron     string                 `json:"cron,omitempty"`
	Task     trellis.AddTaskRequest `json:"task"`
	Anchor   time.Time              `json:"anchor"`
	NextTick time.Time              `json:"next_tick"`
}

// TickPayload is the payload of a tick: its time and the schedule's
// generation (the id of the created event that armed the chain).
type TickPayload struct {
	Tick       time.Time `json:"tick"`
	Generation string    `json:"generation"`
}

// FiredPayload is the payload of a fired event: the tick, its task, the
// next tick, and the ticks skipped since the one before (taken up late,
// within the grace).
type FiredPayload struct {
	Tick     time.Time            `json:"tick"`
	TaskID   string               `json:"task_id"`
	NextTick time.Time            `json:"next_tick"`
	Missed   *trellis.MissedTicks `json:"missed,omitempty"`
}

// TicksMissedPayload is the payload of a ticks_missed event.
type TicksMissedPayload struct {
	Missed   trellis.MissedTicks `json:"missed"`
	NextTick time.Time           `json:"next_tick"`
}

// ScheduleFilter is the subject filter of a schedule, whatever its queue.
func ScheduleFilter(name string) string { return "trellis.queue.*._schedule." + name + ".>" }

func scheduleSubject(queue, name, typ string) string {
	return "trellis.queue." + queue + "._schedule." + name + "." + typ
}

// TickSubjects are the subjects of every schedule's ticks.
func TickSubjects() []string { return []string{"trellis.queue.*._schedule.*." + Tick} }

var scheduleKind = command.Kind[*trellis.Schedule]{
	Name:     "schedule",
	Stream:   events.StreamQueue,
	Filter:   ScheduleFilter,
	Fold:     foldScheduleEvent,
	Clone:    (*trellis.Schedule).Clone,
	Schema:   Schema,
	Snapshot: scheduleSnapshotFilter,
}

func foldSchedule(s *trellis.Schedule, rec events.Recorded) (*trellis.Schedule, error) {
	at := rec.Time.UTC()
	switch rec.Type {
	case ScheduleCreated:
		var p ScheduleCreatedPayload
		if err := rec.DecodePayload(&p); err != nil {
			return s, err
		}
		next := p.NextTick.UTC()
		return &trellis.Schedule{Name: rec.AggregateID, Queue: p.Queue, Every: p.Every, Cron: p.Cron, Task: p.Task,
			CreatedAt: at, CreatedBy: rec.Actor, Anchor: p.Anchor.UTC(), NextTick: &next, Generation: rec.ID}, nil
	case Fired:
		var p FiredPayload
		if err := rec.DecodePayload(&p); err != nil || s == nil {
			return s, err
		}
		tick, next := p.Tick.UTC(), p.NextTick.UTC()
		s.LastTick, s.LastTaskID, s.NextTick = &tick, p.TaskID, &next
		s.Fired++
		if p.Missed != nil {
			m := *p.Missed
			s.Missed += m.Count
			s.LastMissed = &m
		}
	case TicksMissed:
		var p TicksMissedPayload
		if err := rec.DecodePayload(&p); err != nil || s == nil {
			return s, err
		}
		next := p.NextTick.UTC()
		m := p.Missed
		s.Missed += m.Count
		s.LastMissed, s.NextTick = &m, &next
	case ScheduleRemoved:
		if s != nil {
			s.Removed, s.RemovedAt, s.NextTick = true, &at, nil
		}
	}
	return s, nil
}

// AddSchedule creates a schedule and arms its first tick's timer, in one
// atomic batch. A schedule of the same name that is not removed is a
// conflict.
func (q *Handler) AddSchedule(ctx context.Context, req trellis.ScheduleRequest) (*trellis.Schedule, error) {
	if err := req.Normalize(); err != nil {
		return nil, err
	}
	period, err := req.Period()
	if err != nil {
		return nil, err
	}
	actor := req.Actor
	if actor == "" {
		actor = "operator"
	}
	task := req.AddTaskRequest
	task.Queue = ""
	var st command.State[*trellis.Schedule]
	var ps []events.Pending
	acks, err := command.Atomic(ctx, q.store, q.cfg.Command, func(ctx context.Context) ([]events.Pending, error) {
		var err error
		if st, err = q.schedules.Load(ctx, req.Name); err != nil {
			return nil, command.StoreError("load schedule", err)
		}
		if s := st.Value; s != nil && !s.Removed {
			return nil, &trellis.Error{Code: trellis.CodeConflict, Field: "name",
				Message: fmt.Sprintf("schedule %s exists (queue %s, %s); remove it first", req.Name, s.Queue, describe(s))}
		}
		now := q.cfg.Now().UTC()
		anchor := now.Truncate(time.Second)
		next := period.Next(anchor, now)
		created, err := q.schedules.Pending(ctx, st, actor, command.Decision{Subject: scheduleSubject(req.Queue, req.Name, ScheduleCreated),
			Type: ScheduleCreated, Check: ScheduleFilter(req.Name), At: now,
			Payload: ScheduleCreatedPayload{Queue: req.Queue, Every: req.Every, Cron: req.Cron, Task: task, Anchor: anchor, NextTick: next}})
		if err != nil {
			return nil, err
		}
		timer, err := scheduleTimer(req.Queue, req.Name, created.Envelope.ID, next)
		if err != nil {
			return nil, err
		}
		ps = []events.Pending{created, timer}
		return ps, nil
	})
	if errors.Is(err, command.ErrConflict) {
		return nil, trellis.Errorf(trellis.CodeConflict, "schedule %s keeps changing concurrently; try again", req.Name)
	}
	if err != nil {
		return nil, command.StoreError("add schedule", err)
	}
	st, err = q.schedules.Appended(st, ps[0], acks[0].Seq)
	if err != nil {
		return nil, command.StoreError("add schedule", err)
	}
	return st.Value.Clone(), nil
}

// scheduleTimer is the timer of a schedule's tick at `at`.
func scheduleTimer(queue, name, generation string, at time.Time) (events.Pending, error) {
	env, err := events.NewEnvelope(at, Tick, name, "", Schema, TickPayload{Tick: at, Generation: generation})
	if err != nil {
		return events.Pending{}, err
	}
	return timerPending(TimerSubject(queue, "schedule", name), scheduleSubject(queue, name, Tick), env, at), nil
}

func describe(s *trellis.Schedule) string {
	if s.Cron != "" {
		return "cron " + s.Cron
	}
	return "every " + s.Every
}

// RemoveSchedule removes a schedule: its pending tick is ignored when the
// server publishes it, and no timer follows.
func (q *Handler) RemoveSchedule(ctx context.Context, req trellis.RemoveScheduleRequest) (*trellis.Schedule, error) {
	if err := trellis.ValidateScheduleName(req.Name); err != nil {
		return nil, err
	}
	actor := req.Actor
	if actor == "" {
		actor = "operator"
	}
	st, err := q.schedules.Load(ctx, req.Name)
	if err != nil {
		return nil, command.StoreError("load schedule", err)
	}
	st, err = q.schedules.Run(ctx, st, actor, func(s *trellis.Schedule) (command.Decision, error) {
		if s == nil || s.Removed {
			return command.Decision{}, trellis.Errorf(trellis.CodeNotFound, "schedule %s does not exist", req.Name)
		}
		return command.Decision{Subject: scheduleSubject(s.Queue, req.Name, ScheduleRemoved), Type: ScheduleRemoved, Payload: struct{}{}}, nil
	})
	if errors.Is(err, command.ErrConflict) {
		return nil, trellis.Errorf(trellis.CodeConflict, "schedule %s keeps changing concurrently; try again", req.Name)
	}
	if err != nil {
		return nil, command.StoreError("remove schedule", err)
	}
	return st.Value.Clone(), nil
}

// Schedule returns one schedule (removed ones too).
func (q *Handler) Schedule(ctx context.Context, name string) (*trellis.Schedule, error) {
	if err := trellis.ValidateScheduleName(name); err != nil {
		return nil, err
	}
	st, err := q.schedules.Load(ctx, name)
	if err != nil {
		return nil, command.StoreError("load schedule", err)
	}
	if st.Value == nil {
		return nil, trellis.Errorf(trellis.CodeNotFound, "schedule %s does not exist", name)
	}
	return st.Value.Clone(), nil
}

// Schedules lists the schedules that are not removed, by name.
func (q *Handler) Schedules(ctx context.Context) ([]*trellis.Schedule, error) {
	names := map[string]bool{}
	err := q.store.LastHeadersPerSubject(ctx, events.StreamQueue, []string{"trellis.queue.*._schedule.*." + ScheduleCreated, "trellis.queue.*._schedule.*." + Snapshot}, func(h events.HeaderRecord) error {
		parts := strings.Split(h.Subject, ".")
		if len(parts) == 6 {
			names[parts[4]] = true
		}
		return nil
	})
	if err != nil {
		return nil, command.StoreError("list schedules", err)
	}
	out := []*trellis.Schedule{}
	for name := range names {
		s, err := q.Schedule(ctx, name)
		if err != nil {
			return nil, err
		}
		if !s.Removed {
			out = append(out, s)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// errTickTaken reports a tick that was already taken up.
var errTickTaken = errors.New("tick already taken up")

// TakeTick takes up one tick of a schedule (see above): it adds the
// tick's task and arms the next timer, or reports the ticks missed when
// the tick comes later than the grace, or does nothing when the tick was
// taken up before or belongs to a removed schedule or an older
// generation. It returns the task added, if any.
func (q *Handler) TakeTick(ctx context.Context, name string, p TickPayload) (*trellis.Task, error) {
	s, err := q.Schedule(ctx, name)
	if trellis.ErrorCode(err) == trellis.CodeNotFound {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	tick := p.Tick.UTC()
	if stale(s, p.Generation, tick) {
		return nil, nil
	}
	q.maybeSnapshotSchedule(ctx, name)
	period, err := s.Period()
	if err != nil {
		return nil, trellis.Errorf(trellis.CodeInternal, "schedule %s: %w", name, err)
	}
	if q.cfg.Now().Sub(tick) > q.cfg.TickGrace {
		return nil, q.missTicks(ctx, name, p.Generation, tick, period)
	}
	req := s.Task
	req.Queue = s.Queue
	if err := req.Normalize(); err != nil {
		return nil, trellis.Errorf(trellis.CodeInternal, "schedule %s: its task: %w", name, err)
	}
	id := tickTaskID(name, p.Generation, tick)
	t, err := q.addAtomic(ctx, req, atomicAdd{id: id, schedule: name, tick: tick,
		extra: func(ctx context.Context, now time.Time) ([]events.Pending, error) {
			st, err := q.schedules.Load(ctx, name)
			if err != nil {
				return nil, command.StoreError("load schedule", err)
			}
			s := st.Value
			if s == nil || stale(s, p.Generation, tick) {
				return nil, errTickTaken
			}
			fp := FiredPayload{Tick: tick, TaskID: id, NextTick: period.Next(s.Anchor, tick)}
			if !fp.NextTick.After(now) {
				// Taken up late (within the grace): the ticks since are
				// skipped, and the next timer is armed from now.
				n, last := period.Count(s.Anchor, tick, now)
				if n > 0 {
					fp.Missed = &trellis.MissedTicks{Count: n, First: period.Next(s.Anchor, tick), Last: last, ReportedAt: now}
				}
				fp.NextTick = period.Next(s.Anchor, now)
			}
			fired, err := q.schedules.Pending(ctx, st, "trellis", command.Decision{Subject: scheduleSubject(s.Queue, name, Fired),
				Type: Fired, Payload: fp, Check: ScheduleFilter(name), At: now})
			if err != nil {
				return nil, err
			}
			timer, err := scheduleTimer(s.Queue, name, p.Generation, fp.NextTick)
			if err != nil {
				return nil, err
			}
			return []events.Pending{fired, timer}, nil
		}})
	if errors.Is(err, errTickTaken) {
		return nil, nil
	}
	q.schedules.Forget(name) // the batch moved it on
	return t, err
}

// stale reports a tick the schedule no longer waits for.
func stale(s *trellis.Schedule, generation string, tick time.Time) bool {
	switch {
	case s.Removed || s.Generation != generation:
		return true
	case s.LastTick != nil && !tick.After(*s.LastTick):
		return true
	case s.LastMissed != nil && !tick.After(s.LastMissed.Last):
		return true
	}
	return false
}

// missTicks reports the ticks from tick up to now as missed and arms the
// next timer from now.
func (q *Handler) missTicks(ctx context.Context, name, generation string, tick time.Time, period trellis.Period) error {
	var st command.State[*trellis.Schedule]
	var ps []events.Pending
	acks, err := command.Atomic(ctx, q.store, q.cfg.Command, func(ctx context.Context) ([]events.Pending, error) {
		var err error
		if st, err = q.schedules.Load(ctx, name); err != nil {
			return nil, command.StoreError("load schedule", err)
		}
		s := st.Value
		if s == nil || stale(s, generation, tick) {
			return nil, errTickTaken
		}
		now := q.cfg.Now().UTC()
		n, last := period.Count(s.Anchor, tick.Add(-time.Nanosecond), now)
		mp := TicksMissedPayload{Missed: trellis.MissedTicks{Count: n, First: tick, Last: last, ReportedAt: now}, NextTick: period.Next(s.Anchor, now)}
		missed, err := q.schedules.Pending(ctx, st, "trellis", command.Decision{Subject: scheduleSubject(s.Queue, name, TicksMissed),
			Type: TicksMissed, Payload: mp, Check: ScheduleFilter(name), At: now})
		if err != nil {
			return nil, err
		}
		timer, err := scheduleTimer(s.Queue, name, generation, mp.NextTick)
		if err != nil {
			return nil, err
		}
		ps = []events.Pending{missed, timer}
		return ps, nil
	})
	if errors.Is(err, errTickTaken) {
		return nil
	}
	if err != nil {
		return command.StoreError("report missed ticks", err)
	}
	_, err = q.schedules.Appended(st, ps[0], acks[0].Seq)
	return err
}

// tickTaskID is the task id of a schedule's tick: a ULID whose time is the
// tick's and whose randomness derives from the schedule, its generation
// and the tick, so every server taking the tick up names the same task.
func tickTaskID(name, generation string, tick time.Time) string {
	sum := sha256.Sum256([]byte(name + "\x00" + generation + "\x00" + tick.UTC().Format(time.RFC3339Nano)))
	var entropy [10]byte
	copy(entropy[:], sum[:10])
	id, err := ulid.New(ulid.Timestamp(tick), bytesReader(entropy[:]))
	if err != nil {
		panic(fmt.Sprintf("tick task id: %v", err)) // 10 bytes always suffice
	}
	return id.String()
}

type bytesReader []byte

func (b bytesReader) Read(p []byte) (int, error) { return copy(p, b), nil }
