package agentmemory

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/auth"
	"github.com/trellis/trellis/command"
	"github.com/trellis/trellis/events"
	"github.com/trellis/trellis/memory"
)

// lockScope locks a memory scope's aggregate and catches it up.
func (m *Handler) lockScope(ctx context.Context, scope string) (*scopeEntry, error) {
	unlock := m.scopes.Lock(scope)
	st, err := m.scopes.Load(ctx, scope)
	if err != nil {
		unlock()
		return nil, command.StoreError("load memory "+scope, err)
	}
	if st.Value == nil {
		st.Value = events.NewMemoryState(scope)
	}
	return &scopeEntry{m: st.Value, st: st, unlock: unlock}, nil
}

// appendScope appends a memory event with the scope's expected last
// sequence; on a lost race the command runner catches up and asks decide
// again.
func (m *Handler) appendScope(ctx context.Context, e *scopeEntry, typ, actor string, decide func() (any, error)) error {
	st, err := m.scopes.Run(ctx, e.st, actor, func(*events.MemoryState) (command.Decision, error) {
		payload, err := decide()
		if err != nil {
			return command.Decision{}, err
		}
		return command.Decision{Subject: events.MemorySubject(e.m.Scope, typ), Type: typ, Payload: payload}, nil
	})
	switch {
	case errors.Is(err, events.ErrPayloadTooLarge):
		return trellis.Errorf(trellis.CodeInvalid, "the %s event is too large to record: consolidate more often", typ)
	case errors.Is(err, command.ErrConflict):
		return trellis.Errorf(trellis.CodeConflict, "memory %s keeps changing concurrently; try again", e.m.Scope)
	case err != nil:
		return command.StoreError("append "+typ, err)
	}
	e.st, e.m = st, st.Value
	return nil
}

// Observe records an observation on a branch, or on an agent's branch of
// an open task the agent joined.
func (m *Handler) Observe(ctx context.Context, req trellis.ObserveRequest) (*events.Observation, error) {
	if err := req.Normalize(); err != nil {
		return nil, err
	}
	if err := taskBranchObservation(ctx, &req); err != nil {
		return nil, err
	}
	branch, taskID, agent := req.Branch, "", ""
	scope := events.MemoryScope(branch)
	if branch == "" {
		if err := trellis.ValidateAgentID("agent_id", req.Agent); err != nil {
			return nil, err
		}
		te, err := m.openTask(ctx, req.Task)
		if err != nil {
			return nil, err
		}
		a, ok := te.t.Agent(req.Agent)
		name, tid := te.t.Name, te.t.TaskID
		scope = te.t.Scope()
		te.unlock()
		if !ok {
			return nil, trellis.Errorf(trellis.CodeNotFound, "agent %s has not joined task %s (join it first)", req.Agent, name)
		}
		if a.Completed {
			return nil, trellis.Errorf(trellis.CodeConflict, "agent %s has completed its work on task %s", req.Agent, name)
		}
		branch, taskID, agent = events.AgentBranch(name, req.Agent), tid, req.Agent
	}
	e, err := m.lockScope(ctx, scope)
	if err != nil {
		return nil, err
	}
	defer e.unlock()
	p := events.ObservedPayload{ObservationID: "obs_" + events.NewID(m.now()), Branch: branch, Session: req.Session,
		Type: req.Type, Text: req.Text, TaskID: taskID, AgentID: agent}
	if err := m.appendScope(ctx, e, events.MemoryObserved, events.ActorOr(agent), func() (any, error) { return p, nil }); err != nil {
		return nil, err
	}
	o := e.m.Observations[len(e.m.Observations)-1]
	c := *o
	return &c, nil
}

// branchScope is the memory scope of a task's parent branch: a task's
// branch (task/<name>[/...]) is in the scope of the current task of that
// name (own, when it is own's); any other branch in its name's scope.
func (m *Handler) branchScope(ctx context.Context, branch string, own *events.AgentTask) (string, error) {
	rest, ok := strings.CutPrefix(branch, "task/")
	if !ok {
		return events.MemoryScope(branch), nil
	}
	name, _, _ := strings.Cut(rest, "/")
	if name == own.Name {
		return own.Scope(), nil
	}
	if trellis.ValidateTaskName("branch", name) != nil {
		return events.MemoryScope(branch), nil
	}
	// Read without the name's lock: the caller holds its own task's, and
	// two tasks that are each other's parent must not wait on each other.
	st, err := m.tasks.Load(ctx, name)
	if err != nil {
		return "", command.StoreError("load task "+name, err)
	}
	if st.Value == nil {
		return events.MemoryScope(branch), nil
	}
	return st.Value.Scope(), nil
}

// taskBranchObservation turns an observation named by an agent's branch
// (task/<name>/<agent>) into one named by task and agent, so it gets the
// same checks (the agent joined the open task and has not completed),
// and checks that the caller is that agent. Task branches are written by
// consolidation only: an observation on task/<name> or below an agent's
// branch is refused.
func taskBranchObservation(ctx context.Context, req *trellis.ObserveRequest) error {
	rest, ok := strings.CutPrefix(req.Branch, "task/")
	if !ok {
		return nil
	}
	parts := strings.Split(rest, "/")
	if len(parts) != 2 {
		return trellis.FieldError("branch", "%q is a task's branch, which only consolidation writes: observe with --task and --agent (or on task/<name>/<agent>)", req.Branch)
	}
	if caller := events.ActorFrom(ctx); caller != "" && !events.ActsAs(caller, parts[1]) {
		return &trellis.Error{Code: trellis.CodeUnauthorized, Field: "branch", Err: auth.ErrForbidden,
			Message: fmt.Sprintf("token %q may not observe on agent %s's branch %s", caller, parts[1], req.Branch)}
	}
	req.Branch, req.Task, req.Agent = "", parts[0], parts[1]
	return nil
}

// toMemoryFacts converts active facts for the pure algorithms.
func toMemoryFacts(fs []*events.Fact) []memory.Fact {
	out := make([]memory.Fact, len(fs))
	for i, f := range fs {
		out[i] = memory.Fact{ID: f.FactID, Text: f.FactText, Category: f.Category, Confidence: f.Confidence}
	}
	return out
}

func (m *Handler) newFactID() string { return "fact_" + events.NewID(m.now()) }

// sessionRuns consolidates the unprocessed observations of the sessions
// given (all sessions when nil) on one branch of a scope: one run, and one
// event, per session, in the order the sessions first observed.
func (m *Handler) sessionRuns(ctx context.Context, e *scopeEntry, branch string, only map[string]bool, actor string) ([]events.ConsolidatedPayload, error) {
	var sessions []string
	seen := map[string]bool{}
	for _, o := range e.m.Observations {
		if o.Branch == branch && !o.Processed && !seen[o.Session] && (only == nil || only[o.Session]) {
			seen[o.Session] = true
			sessions = append(sessions, o.Session)
		}
	}
	var runs []events.ConsolidatedPayload
	for _, session := range sessions {
		var p events.ConsolidatedPayload
		err := m.appendScope(ctx, e, events.MemoryConsolidated, actor, func() (any, error) {
			p = m.sessionRun(e.m, branch, session)
			return p, nil
		})
		if err != nil {
			return runs, err
		}
		runs = append(runs, p)
	}
	return runs, nil
}

// sessionRun decides one session consolidation on a branch.
func (m *Handler) sessionRun(st *events.MemoryState, branch, session string) events.ConsolidatedPayload {
	var obs []memory.Observation
	var all []string
	byID := map[string]*events.Observation{}
	for _, o := range st.Observations {
		if o.Branch == branch && o.Session == session && !o.Processed {
			obs = append(obs, memory.Observation{ID: o.ObservationID, Type: o.Type, Text: o.Text})
			all = append(all, o.ObservationID)
			byID[o.ObservationID] = o
		}
	}
	res := memory.ConsolidateSession(toMemoryFacts(st.ActiveFacts(branch)), obs, m.newFactID)
	p := events.ConsolidatedPayload{RunID: "run_" + events.NewID(m.now()), Type: "session_end", Session: session,
		SourceBranch: branch, TargetBranch: branch, Processed: all,
		Created: []events.FactRecord{}, Updated: []events.FactConfidence{}, Deduplicated: []string{}, Superseded: []events.FactSupersession{}}
	if len(obs) > 0 {
		first := byID[obs[0].ID]
		p.TaskID, p.AgentID = first.TaskID, first.AgentID
	}
	for _, f := range res.Created {
		o := byID[f.Source]
		rec := events.FactRecord{FactID: f.ID, FactText: f.Text, Category: f.Category, Confidence: f.Confidence, Branch: branch,
			Observations: []string{f.Source}, Session: session}
		if o != nil {
			rec.TaskID, rec.AgentID = o.TaskID, o.AgentID
		}
		p.Created = append(p.Created, rec)
	}
	for _, u := range res.Updated {
		p.Updated = append(p.Updated, events.FactConfidence{FactID: u.FactID, From: u.From, To: u.To, Observation: u.Observation})
	}
	p.Deduplicated = append(p.Deduplicated, res.Deduplicated...)
	p.Summary = fmt.Sprintf("session %s on %s: %d observation(s) processed (%d skipped by type): %d fact(s) created, %d updated, %d deduplicated",
		session, branch, res.Processed, res.Skipped, len(p.Created), len(p.Updated), len(p.Deduplicated))
	return p
}

// agentRun decides an agent consolidation: duplicates on the agent's
// branch grouped transitively (keepers: highest confidence, newest on
// ties), then the agent's active facts merged into the task branch.
func (m *Handler) agentRun(st *events.MemoryState, t *events.AgentTask, agent string) events.ConsolidatedPayload {
	ab, tb := events.AgentBranch(t.Name, agent), t.Branch
	active := st.ActiveFacts(ab)
	_, sup := memory.GroupDuplicates(toMemoryFacts(active))
	p := events.ConsolidatedPayload{RunID: "run_" + events.NewID(m.now()), Type: "agent_complete", TaskID: t.TaskID, AgentID: agent,
		SourceBranch: ab, TargetBranch: tb, Processed: []string{},
		Created: []events.FactRecord{}, Updated: []events.FactConfidence{}, Deduplicated: []string{}, Superseded: []events.FactSupersession{}}
	superseded := map[string]bool{}
	for _, s := range sup {
		p.Superseded = append(p.Superseded, events.FactSupersession{FactID: s.FactID, ParentID: s.KeeperID})
		superseded[s.FactID] = true
	}
	var keep []*events.Fact
	for _, f := range active {
		if !superseded[f.FactID] {
			keep = append(keep, f)
		}
	}
	mr := memory.Merge(toMemoryFacts(st.ActiveFacts(tb)), toMemoryFacts(keep), m.newFactID)
	byID := map[string]*events.Fact{}
	for _, f := range keep {
		byID[f.FactID] = f
	}
	for _, f := range mr.Created {
		src := byID[f.Source]
		rec := events.FactRecord{FactID: f.ID, FactText: f.Text, Category: f.Category, Confidence: f.Confidence, Branch: tb,
			SourceFact: f.Source, TaskID: t.TaskID, AgentID: agent}
		if src != nil {
			rec.Observations, rec.Session = src.Observations, src.Session
		}
		p.Created = append(p.Created, rec)
	}
	for _, u := range mr.Updated {
		p.Updated = append(p.Updated, events.FactConfidence{FactID: u.FactID, From: u.From, To: u.To, SourceFact: u.Observation})
	}
	p.Deduplicated = append(p.Deduplicated, mr.Deduplicated...)
	p.Summary = fmt.Sprintf("agent %s on %s: %d active fact(s), %d superseded as duplicates; merged into %s: %d created, %d updated, %d deduplicated",
		agent, ab, len(active), len(p.Superseded), tb, len(p.Created), len(p.Updated), len(p.Deduplicated))
	return p
}

// taskRun decides a task consolidation: the task branch's active facts
// classified durable or ephemeral.
func (m *Handler) taskRun(st *events.MemoryState, t *events.AgentTask) events.ConsolidatedPayload {
	active := st.ActiveFacts(t.Branch)
	durable, ephemeral := memory.Classify(toMemoryFacts(active))
	p := events.ConsolidatedPayload{RunID: "run_" + events.NewID(m.now()), Type: "task_checkpoint", TaskID: t.TaskID,
		SourceBranch: t.Branch, TargetBranch: t.ParentBranch, Processed: []string{},
		Created: []events.FactRecord{}, Updated: []events.FactConfidence{}, Deduplicated: []string{}, Superseded: []events.FactSupersession{},
		Durable: nonNilIDs(durable), Ephemeral: nonNilIDs(ephemeral)}
	p.Summary = fmt.Sprintf("task %s: %d active fact(s) on %s: %d durable, %d ephemeral", t.Name, len(active), t.Branch, len(durable), len(ephemeral))
	return p
}

func nonNilIDs(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// CompleteAgent runs the agent's session consolidations, then its agent
// consolidation, and records the agent's completion with a summary.
func (m *Handler) CompleteAgent(ctx context.Context, req trellis.AgentCompleteRequest, markComplete bool) ([]events.ConsolidatedPayload, error) {
	if err := trellis.ValidateAgentID("agent_id", req.Agent); err != nil {
		return nil, err
	}
	te, err := m.openTask(ctx, req.Task)
	if err != nil {
		return nil, err
	}
	defer te.unlock()
	a, ok := te.t.Agent(req.Agent)
	if !ok {
		return nil, trellis.Errorf(trellis.CodeNotFound, "agent %s has not joined task %s", req.Agent, te.t.Name)
	}
	if a.Completed {
		return nil, trellis.Errorf(trellis.CodeConflict, "agent %s already completed its work on task %s", req.Agent, te.t.Name)
	}
	se, err := m.lockScope(ctx, te.t.Scope())
	if err != nil {
		return nil, err
	}
	defer se.unlock()
	runs, err := m.sessionRuns(ctx, se, events.AgentBranch(te.t.Name, req.Agent), nil, req.Agent)
	if err != nil {
		return runs, err
	}
	var agentRun events.ConsolidatedPayload
	if err := m.appendScope(ctx, se, events.MemoryConsolidated, req.Agent, func() (any, error) {
		agentRun = m.agentRun(se.m, te.t, req.Agent)
		return agentRun, nil
	}); err != nil {
		return runs, err
	}
	runs = append(runs, agentRun)
	if markComplete {
		var done []string
		for _, o := range te.t.Objectives {
			if o.AgentID == req.Agent && o.Status == "done" {
				done = append(done, o.ObjectiveID)
			}
		}
		summary := fmt.Sprintf("%s (%s): %s", req.Agent, a.Role, agentRun.Summary)
		if len(done) > 0 {
			summary += "; objectives done: " + strings.Join(done, ", ")
		}
		if err := m.appendTask(ctx, te, te.t.Name, events.AgentCompleted, req.Agent, events.AgentCompletedPayload{
			TaskID: te.t.TaskID, AgentID: req.Agent, Summary: summary}); err != nil {
			return runs, err
		}
	}
	return runs, nil
}

// CompleteTask runs the task consolidation and, with merge, merges the
// durable facts into the parent branch; markComplete records the task's
// completion.
func (m *Handler) CompleteTask(ctx context.Context, req trellis.AgentTaskCompleteRequest, markComplete bool) ([]events.ConsolidatedPayload, error) {
	te, err := m.openTask(ctx, req.Task)
	if err != nil {
		return nil, err
	}
	defer te.unlock()
	if markComplete && !req.Force {
		// Decided on the task as the log has it (openTask caught it up),
		// under the task's lock.
		if open := taskView(te.t).Unfinished(); len(open) > 0 {
			return nil, trellis.Errorf(trellis.CodeConflict,
				"task %s has unfinished work: %s; finish it first, or force the completion (trellis task complete --force; \"force\": true over HTTP, MCP and NATS)",
				te.t.Name, strings.Join(open, "; "))
		}
	}
	se, err := m.lockScope(ctx, te.t.Scope())
	if err != nil {
		return nil, err
	}
	var run events.ConsolidatedPayload
	err = m.appendScope(ctx, se, events.MemoryConsolidated, "trellis", func() (any, error) {
		run = m.taskRun(se.m, te.t)
		return run, nil
	})
	durableFacts := map[string]*events.Fact{}
	for _, id := range run.Durable {
		if f, ok := se.m.Facts[id]; ok {
			c := *f
			durableFacts[id] = &c
		}
	}
	se.unlock()
	if err != nil {
		return nil, err
	}
	runs := []events.ConsolidatedPayload{run}
	if req.Merge && len(run.Durable) > 0 {
		scope, err := m.branchScope(ctx, te.t.ParentBranch, te.t)
		if err != nil {
			return runs, err
		}
		pe, err := m.lockScope(ctx, scope)
		if err != nil {
			return runs, err
		}
		var merge events.ConsolidatedPayload
		err = m.appendScope(ctx, pe, events.MemoryConsolidated, "trellis", func() (any, error) {
			var incoming []*events.Fact
			for _, id := range run.Durable {
				incoming = append(incoming, durableFacts[id])
			}
			mr := memory.Merge(toMemoryFacts(pe.m.ActiveFacts(te.t.ParentBranch)), toMemoryFacts(incoming), m.newFactID)
			merge = events.ConsolidatedPayload{RunID: "run_" + events.NewID(m.now()), Type: "merge", TaskID: te.t.TaskID,
				SourceBranch: te.t.Branch, TargetBranch: te.t.ParentBranch, Processed: []string{},
				Created: []events.FactRecord{}, Updated: []events.FactConfidence{}, Deduplicated: []string{}, Superseded: []events.FactSupersession{}}
			for _, f := range mr.Created {
				src := durableFacts[f.Source]
				rec := events.FactRecord{FactID: f.ID, FactText: f.Text, Category: f.Category, Confidence: f.Confidence,
					Branch: te.t.ParentBranch, SourceFact: f.Source, TaskID: te.t.TaskID}
				if src != nil {
					rec.Observations, rec.AgentID, rec.Session = src.Observations, src.AgentID, src.Session
				}
				merge.Created = append(merge.Created, rec)
			}
			for _, u := range mr.Updated {
				merge.Updated = append(merge.Updated, events.FactConfidence{FactID: u.FactID, From: u.From, To: u.To, SourceFact: u.Observation})
			}
			merge.Deduplicated = append(merge.Deduplicated, mr.Deduplicated...)
			merge.Summary = fmt.Sprintf("merged %d durable fact(s) of %s into %s: %d created, %d updated, %d deduplicated",
				len(incoming), te.t.Branch, te.t.ParentBranch, len(merge.Created), len(merge.Updated), len(merge.Deduplicated))
			return merge, nil
		})
		pe.unlock()
		if err != nil {
			return runs, err
		}
		runs = append(runs, merge)
	}
	if markComplete {
		if err := m.appendTask(ctx, te, te.t.Name, events.AgentTaskCompleted, "trellis", events.AgentTaskCompletedPayload{
			TaskID: te.t.TaskID, Merged: req.Merge, Durable: run.Durable, Ephemeral: run.Ephemeral}); err != nil {
			return runs, err
		}
	}
	return runs, nil
}

// ConsolidateSession consolidates one session's unprocessed observations
// wherever they are: scopes holds the memory scopes the session observed
// in (from the fact-store projection).
func (m *Handler) ConsolidateSession(ctx context.Context, session string, scopes map[string][]string) ([]events.ConsolidatedPayload, error) {
	if !trellis.ValidSession(session) {
		return nil, trellis.FieldError("session", "%q is not a session id", session)
	}
	if len(scopes) == 0 {
		return nil, trellis.Errorf(trellis.CodeNotFound, "session %s has no observations", session)
	}
	var runs []events.ConsolidatedPayload
	for scope, branches := range scopes {
		e, err := m.lockScope(ctx, scope)
		if err != nil {
			return runs, err
		}
		for _, b := range branches {
			r, err := m.sessionRuns(ctx, e, b, map[string]bool{session: true}, "trellis")
			runs = append(runs, r...)
			if err != nil {
				e.unlock()
				return runs, err
			}
		}
		e.unlock()
	}
	return runs, nil
}
