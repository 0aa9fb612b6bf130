package audit

import (
	"context"
	"strings"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/command"
	"github.com/trellis/trellis/events"
	"github.com/trellis/trellis/taskqueue"
	"github.com/trellis/trellis/vine"
)

// AggregateEvents returns every event of the aggregate with the given id, in order:
// a task id (ULID) gives the task's queue history; a graph id gives the
// graph's history; "<graph id>:<task id>" gives the events of the graph
// that concern that task (its batches, plus imports, hand edits and
// expansions, which concern every task).
func AggregateEvents(ctx context.Context, store *events.Store, id string) ([]events.Recorded, error) {
	graph, task, scoped := strings.Cut(id, ":")
	if events.IsGraphID(graph) {
		recs, _, err := store.Load(ctx, events.StreamVine, events.GraphFilter(graph))
		if err != nil {
			return nil, command.StoreError("audit", err)
		}
		if len(recs) == 0 {
			return nil, trellis.Errorf(trellis.CodeNotFound, "no events for graph %s", graph)
		}
		if !scoped {
			return recs, nil
		}
		if !vine.ValidID(task) {
			return nil, trellis.FieldError("id", "%q is not a VINE task id", task)
		}
		var out []events.Recorded
		for _, r := range recs {
			if events.TouchesTask(r, task) {
				out = append(out, r)
			}
		}
		return out, nil
	}
	if err := trellis.ValidateTaskID("id", id); err != nil {
		return nil, trellis.FieldError("id", "%q is neither a task id (ULID), a graph id (g + 20 hex) nor <graph id>:<task id>", id)
	}
	recs, _, err := store.Load(ctx, events.StreamQueue, taskqueue.Filter(id))
	if err != nil {
		return nil, command.StoreError("audit", err)
	}
	if len(recs) == 0 {
		// A workflow run's id is a ULID too: its journal.
		if recs, _, err = store.Load(ctx, events.StreamWorkflows, "trellis.workflows.run."+id+".>"); err != nil {
			return nil, command.StoreError("audit", err)
		}
	}
	if len(recs) == 0 {
		return nil, trellis.Errorf(trellis.CodeNotFound, "no events for id %s", id)
	}
	return recs, nil
}
