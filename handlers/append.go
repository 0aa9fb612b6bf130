package handlers

import (
	"context"
	"errors"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/events"
)

// decision is what a command decided against a task's current state: one
// event to append.
type decision struct {
	typ     string
	payload any
}

// taskState is a task as a command starts from: folded from the log
// (fresh) or taken from this process's cache or a dispatch message, which
// may be behind the log.
type taskState struct {
	task  *trellis.Task
	seq   uint64
	fresh bool
}

// decideAndAppend runs decide against the task and appends the event it
// returns with the aggregate's expected last sequence. When another writer
// got there first it reloads the task and decides again. A refusal decided
// from a state that may be stale (a cache, a dispatch) is re-decided from
// the log before it is reported: only the log can say a command is wrong.
// It returns the new state and its sequence.
func (q *Queue) decideAndAppend(ctx context.Context, st taskState, actor string, decide func(*trellis.Task) (decision, error)) (*trellis.Task, uint64, error) {
	task, seq := st.task, st.seq
	for attempt := 0; ; attempt++ {
		d, err := decide(task)
		if err != nil && !st.fresh {
			if task, seq, err = q.load(ctx, task.TaskID); err != nil {
				return nil, 0, err
			}
			st.fresh = true
			continue
		}
		if err != nil {
			return nil, 0, err
		}
		now := q.cfg.Now()
		env, err := events.NewEnvelope(now, d.typ, task.TaskID, actor, events.QueueSchema, d.payload)
		if err != nil {
			return nil, 0, err
		}
		subject := events.QueueSubject(task.Queue, task.TaskID, d.typ)
		ack, err := q.store.Append(ctx, subject, env, events.Expect{Filter: events.TaskFilterIn(task.Queue, task.TaskID), LastSeq: seq}, "")
		if errors.Is(err, events.ErrWrongLastSequence) {
			q.cache.drop(task.TaskID)
			if attempt+1 >= maxDecideAttempts {
				return nil, 0, trellis.Errorf(trellis.CodeConflict, "task %s keeps changing concurrently; try again", task.TaskID)
			}
			if task, seq, err = q.load(ctx, task.TaskID); err != nil {
				return nil, 0, err
			}
			st.fresh = true
			continue
		}
		if err != nil {
			return nil, 0, storeError("append "+d.typ, err)
		}
		next, err := events.ApplyTask(task.Clone(), events.Recorded{Envelope: env, Stream: events.StreamQueue, Subject: subject, Seq: ack.Seq})
		if err != nil {
			return nil, 0, err
		}
		q.cache.put(next, ack.Seq)
		return next.Clone(), ack.Seq, nil
	}
}
