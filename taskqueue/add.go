package taskqueue

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/command"
	"github.com/trellis/trellis/events"
)

// Adding tasks.
//
// A plain add (no delay, no prerequisites, no unique key) is one checked
// append of the task's added event. Any of those makes the add an atomic
// command over several aggregates (command.Atomic), all or nothing:
//
//   - a delay adds the task's timer: a JetStream message schedule
//     (Nats-Schedule "@at <run_at>") on trellis.queue.<queue>._timer.task.<id>
//     whose message the server publishes at run_at as the task's "due"
//     event (a dispatch), then removes; the task is scheduled until then;
//   - each prerequisite not done yet gets a "linked" event naming the new
//     task, checked against the prerequisite's last sequence, so a
//     prerequisite cannot end unseen between the check and the link; the
//     task is waiting until each is done (see Resolver);
//   - a unique key gets a "held" event naming the new task, checked against
//     the key's last sequence, so two adds racing for one key cannot both
//     win; an add whose key is held returns the holder instead.

// errDuplicate reports an add whose unique key is held.
var errDuplicate = errors.New("unique key is held")

// TimerSubject is the subject of a timer (a message schedule) of kind
// "task" or "schedule".
func TimerSubject(queue, kind, id string) string {
	return "trellis.queue." + queue + "._timer." + kind + "." + id
}

// Message-schedule headers (nats-server 2.12+).
const (
	scheduleHdr       = "Nats-Schedule"
	scheduleTargetHdr = "Nats-Schedule-Target"
)

// timerPending is a timer message: at `at`, the server publishes env on
// target.
func timerPending(subject, target string, env events.Envelope, at time.Time) events.Pending {
	h := nats.Header{}
	h.Set(scheduleHdr, "@at "+at.UTC().Format(time.RFC3339Nano))
	h.Set(scheduleTargetHdr, target)
	return events.Pending{Subject: subject, Envelope: env, Expect: events.Expect{None: true}, Header: h}
}

// needsAtomic reports whether an add changes more than the new task.
func needsAtomic(req trellis.AddTaskRequest, now time.Time) bool {
	return req.UniqueKey != "" || len(req.After) > 0 || req.DelayUntil(now).After(now)
}

// addedPayload is the added event of a (normalized) request.
func addedPayload(req trellis.AddTaskRequest) AddedPayload {
	p := AddedPayload{
		Queue:          req.Queue,
		ParentID:       req.ParentID,
		Objective:      req.Objective,
		Inputs:         req.Inputs,
		Acceptance:     req.Acceptance,
		Budget:         trellis.Budget{MaxToolCalls: req.MaxToolCalls, MaxSteps: req.MaxSteps},
		MaxAttempts:    req.MaxAttempts,
		Metadata:       req.Metadata,
		IdempotencyKey: req.IdempotencyKey,
		After:          req.After,
		ConcurrencyKey: req.ConcurrencyKey,
	}
	if req.Priority != trellis.DefaultPriority {
		p.Priority = req.Priority
	}
	if req.Timeout != "" {
		d, _ := time.ParseDuration(req.Timeout) // validated by Normalize
		p.TimeoutMS = d.Milliseconds()
	}
	return p
}

// addCommand is the command adding one (normalized) plain task with id
// (a new aggregate; "" for a fresh id), stored under the idempotency
// key's message id when it has one.
func (q *Handler) addCommand(req trellis.AddTaskRequest, id string) command.Independent[*trellis.Task] {
	if id == "" {
		id = events.NewID(q.cfg.Now())
	}
	msgID := ""
	if req.IdempotencyKey != "" {
		msgID = idempotencyMsgID(req.Queue, req.IdempotencyKey)
	}
	payload := addedPayload(req)
	subject := TaskSubject(&trellis.Task{TaskID: id, Queue: req.Queue, Priority: req.Priority}, Added)
	return command.Independent[*trellis.Task]{State: taskState{ID: id, Fresh: true}, Decide: func(*trellis.Task) (command.Decision, error) {
		return command.Decision{Subject: subject, Type: Added, Payload: payload,
			MsgID: msgID, Check: FilterIn(req.Queue, id)}, nil
	}}
}

// add adds one normalized task: plainly, or atomically with its timer,
// links and unique key's hold.
func (q *Handler) add(ctx context.Context, req trellis.AddTaskRequest) (*trellis.Task, error) {
	if !needsAtomic(req, q.cfg.Now()) {
		cmd := q.addCommand(req, "")
		st, err := q.tasks.Run(ctx, cmd.State, cmd.Actor, cmd.Decide)
		return q.added(ctx, st, err)
	}
	return q.addAtomic(ctx, req, atomicAdd{})
}

// atomicAdd is what an atomic add adds beyond the request: a periodic
// tick's task id, schedule and tick time, and the schedule's own events.
type atomicAdd struct {
	id       string
	schedule string
	tick     time.Time
	// extra returns more events for the batch (after the task's own),
	// decided at now on fresh states.
	extra func(ctx context.Context, now time.Time) ([]events.Pending, error)
}

// addAtomic adds a task with its timer, links and unique key's hold as one
// atomic batch (see above).
func (q *Handler) addAtomic(ctx context.Context, req trellis.AddTaskRequest, a atomicAdd) (*trellis.Task, error) {
	id := a.id
	if id == "" {
		id = events.NewID(q.cfg.Now())
	}
	schedule, tick := a.schedule, a.tick
	var holder *trellis.Task
	var ps []events.Pending
	var linkStates []taskState
	var linkAt []int
	uniqueAt := -1
	var uniqueSt command.State[*UniqueHold]
	acks, err := command.Atomic(ctx, q.store, q.cfg.Command, func(ctx context.Context) ([]events.Pending, error) {
		ps, linkStates, linkAt, uniqueAt = nil, nil, nil, -1
		now := q.cfg.Now().UTC()
		p := addedPayload(req)
		task := &trellis.Task{TaskID: id, Queue: req.Queue, Priority: req.Priority}
		added := command.Decision{Subject: TaskSubject(task, Added), Type: Added, Check: FilterIn(req.Queue, id), At: now}
		if req.IdempotencyKey != "" {
			added.MsgID = idempotencyMsgID(req.Queue, req.IdempotencyKey)
		}
		var rest []events.Pending
		if req.UniqueKey != "" {
			uid := UniqueID(req.Queue, req.UniqueKey)
			var err error
			if uniqueSt, err = q.uniques.Load(ctx, uid); err != nil {
				return nil, command.StoreError("load unique key", err)
			}
			if h := uniqueSt.Value; h != nil {
				held, t, err := q.stillHeld(ctx, h, now)
				if err != nil {
					return nil, err
				}
				if held {
					holder = t
					return nil, errDuplicate
				}
			}
			hp := HeldPayload{TaskID: id}
			if hold := req.UniqueHold(); hold > 0 {
				until := now.Add(hold)
				hp.Until = &until
			}
			p.UniqueKey, p.UniqueUntil = req.UniqueKey, hp.Until
			pd, err := q.uniques.Pending(ctx, uniqueSt, "", command.Decision{Subject: infraSubject(uid, Held), Type: Held, Payload: hp, At: now})
			if err != nil {
				return nil, err
			}
			rest = append(rest, pd)
			uniqueAt = len(rest)
		}
		for _, pid := range req.After {
			st, err := q.tasks.Load(ctx, pid)
			if err != nil {
				return nil, command.StoreError("load prerequisite", err)
			}
			pt := st.Value
			switch {
			case pt == nil:
				return nil, trellis.FieldError("after", "task %s does not exist", pid)
			case pt.Status == trellis.StatusDone:
				p.Prerequisites = append(p.Prerequisites, summary(pt))
				continue
			case pt.Status.Ended():
				return nil, &trellis.Error{Code: trellis.CodeConflict, Field: "after",
					Message: fmt.Sprintf("prerequisite %s is %s: it will never be done (retry it first)", pid, pt.Status)}
			}
			p.WaitingFor = append(p.WaitingFor, pid)
			pd, err := q.tasks.Pending(ctx, st, "", command.Decision{Subject: TaskSubject(pt, Linked), Type: Linked,
				Payload: LinkedPayload{Dependant: id}, Check: FilterIn(pt.Queue, pid), At: now})
			if err != nil {
				return nil, err
			}
			rest = append(rest, pd)
			linkStates = append(linkStates, st)
			linkAt = append(linkAt, len(rest))
		}
		runAt := req.DelayUntil(now)
		if !tick.IsZero() {
			p.Schedule = schedule
			p.IdempotencyKey = schedule + "@" + tick.UTC().Format(time.RFC3339)
		}
		if runAt.After(now) {
			p.RunAt = &runAt
			env, err := events.NewEnvelope(runAt, Due, id, "", Schema, DuePayload{RunAt: runAt})
			if err != nil {
				return nil, err
			}
			rest = append(rest, timerPending(TimerSubject(req.Queue, "task", id), TaskSubject(task, Due), env, runAt))
		}
		added.Payload = p
		first, err := q.tasks.Pending(ctx, taskState{ID: id, Fresh: true}, "", added)
		if err != nil {
			return nil, err
		}
		if req.IdempotencyKey != "" && tick.IsZero() {
			env, err := events.NewEnvelope(now, "idempotency", id, "", Schema, map[string]string{"task_id": id})
			if err != nil {
				return nil, err
			}
			rest = append(rest, events.Pending{Subject: idempotencyMarker(req.Queue, req.IdempotencyKey), Envelope: env, Expect: events.Expect{None: true}})
		}
		if a.extra != nil {
			more, err := a.extra(ctx, now)
			if err != nil {
				return nil, err
			}
			rest = append(rest, more...)
		}
		// The new task's event goes first: it carries the check that finds
		// the batch again when its acknowledgement is lost.
		ps = append([]events.Pending{first}, rest...)
		return ps, nil
	})
	switch {
	case errors.Is(err, errDuplicate):
		dup := holder.Clone()
		dup.Duplicate = true
		return dup, nil
	case errors.Is(err, events.ErrDuplicateMsgID):
		return q.idempotent(ctx, req)
	case errors.Is(err, command.ErrConflict):
		return nil, trellis.Errorf(trellis.CodeConflict, "add keeps racing with changes to its prerequisites or unique key; try again")
	case err != nil:
		return nil, command.StoreError("add task", err)
	}
	st, err := q.tasks.Appended(taskState{ID: id, Fresh: true}, ps[0], acks[0].Seq)
	if err != nil {
		return nil, command.StoreError("add task", err)
	}
	// ps[0] is the task's event; rest[i] is ps[i+1].
	for i, ls := range linkStates {
		j := linkAt[i]
		if _, err := q.tasks.Appended(ls, ps[j], acks[j].Seq); err != nil {
			q.tasks.Forget(ls.ID)
		}
	}
	if uniqueAt >= 0 {
		if st, err := q.uniques.Appended(uniqueSt, ps[uniqueAt], acks[uniqueAt].Seq); err != nil {
			q.uniques.Forget(uniqueSt.ID)
		} else {
			q.maybeSnapshotUnique(ctx, st)
		}
	}
	return st.Value.Clone(), nil
}

// stillHeld reports whether a unique key's holder still holds it at now:
// until its hold ends, or (without one) while it is not finished.
func (q *Handler) stillHeld(ctx context.Context, h *UniqueHold, now time.Time) (bool, *trellis.Task, error) {
	if h.Until != nil && !now.Before(*h.Until) {
		return false, nil, nil
	}
	st, err := q.tasks.Load(ctx, h.TaskID)
	if err != nil {
		return false, nil, command.StoreError("load unique key holder", err)
	}
	t := st.Value
	if t == nil {
		return false, nil, nil
	}
	if h.Until == nil && t.Status.Terminal() {
		return false, nil, nil
	}
	return true, t, nil
}

// summary is a done task's checkpoint summary for its dependants.
func summary(t *trellis.Task) trellis.Prerequisite {
	p := trellis.Prerequisite{TaskID: t.TaskID, Objective: clip(t.Objective)}
	if cp := t.Checkpoint; cp != nil {
		p.WhatWasDone, p.WhatNext = clip(cp.WhatWasDone), clip(cp.WhatNext)
		p.WhatChanged = clipList(cp.WhatChanged)
		p.Citations = clipList(cp.Citations)
	}
	return p
}

// summaryBytes bounds each text of a prerequisite's summary (a task lists
// at most trellis.MaxAfter of them in one event).
const summaryBytes = 4 << 10

func clip(s string) string {
	if len(s) <= summaryBytes {
		return s
	}
	cut := summaryBytes
	for cut > 0 && s[cut]&0xC0 == 0x80 { // do not split a UTF-8 sequence
		cut--
	}
	return s[:cut] + "…"
}

func clipList(l []string) []string {
	if len(l) > 32 {
		l = l[:32]
	}
	out := make([]string, 0, len(l))
	for _, s := range l {
		out = append(out, clip(s))
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// idempotencyMarker is where an atomic add records the task of its
// idempotency key: a repeated add is refused whole by the stream (its
// message id is stored), and finds the first task there.
func idempotencyMarker(queue, key string) string {
	return "trellis.queue." + queue + "._idem." + keyHash(key) + ".task"
}

// idempotent returns the task an earlier add with req's idempotency key
// created.
func (q *Handler) idempotent(ctx context.Context, req trellis.AddTaskRequest) (*trellis.Task, error) {
	recs, _, err := q.store.Load(ctx, events.StreamQueue, idempotencyMarker(req.Queue, req.IdempotencyKey))
	if err != nil {
		return nil, command.StoreError("load task of idempotency key", err)
	}
	if len(recs) == 0 {
		return nil, &trellis.Error{Code: trellis.CodeConflict, Field: "idempotency_key",
			Message: "an add with this key less than the duplicate window ago had other options; use another key"}
	}
	return q.Show(ctx, recs[len(recs)-1].AggregateID)
}

// added returns the task an add produced: the new one, or the one an
// earlier add with the same idempotency key produced.
func (q *Handler) added(ctx context.Context, st taskState, err error) (*trellis.Task, error) {
	var dup *command.DuplicateError
	if errors.As(err, &dup) {
		orig, err := q.store.Get(ctx, events.StreamQueue, dup.Seq)
		if err != nil {
			return nil, command.StoreError("load task of idempotency key", err)
		}
		return q.Show(ctx, orig.AggregateID)
	}
	if err != nil {
		return nil, command.StoreError("add task", err)
	}
	return st.Value.Clone(), nil
}

// idempotencyMsgID is the message id an add with an idempotency key is
// stored under. The key is hashed: a NATS header value loses trailing
// spaces and turns CR and LF into spaces, so keys that differ only there
// would otherwise share an id and the second add would silently return
// the first task.
func idempotencyMsgID(queue, key string) string {
	sum := sha256.Sum256([]byte(key))
	return "idem:" + queue + ":" + hex.EncodeToString(sum[:])
}

// IdempotencyMsgID is the message id an add with an idempotency key is
// stored under (instead of its event id): audit verify recomputes it from
// the added event's payload.
func IdempotencyMsgID(queue, key string) string { return idempotencyMsgID(queue, key) }
