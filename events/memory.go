package events

import (
	"fmt"
	"strings"
	"time"
)

// Agent-memory event types: the last token of trellis.memory.<scope>.<type>.
// A task's branches (task/<name> and task/<name>/<agent>) share one scope,
// so a consolidation run that supersedes facts on an agent's branch and
// merges them into the task branch is one checked event. That scope is
// keyed by the task's id, "taskid-<id>" (TaskScope; AgentTask.Scope), so a
// later task with the same name starts with empty memory; tasks created
// before that keep the name's scope "task-<name>". Any other branch B has
// the scope "branch-<B with / as ~>".
const (
	// MemoryObserved records an observation an agent made in a session.
	MemoryObserved = "observed"
	// MemoryConsolidated records one consolidation run and every fact it
	// created, updated, superseded or classified.
	MemoryConsolidated = "consolidated"
)

// MemorySchema is the current schema version of memory payloads.
const MemorySchema = 1

// MemoryScope is the aggregate token of a branch's memory by its name
// alone. For a task's branches that is the scope of tasks created before
// memory was keyed by task id; use AgentTask.Scope for a task's own.
func MemoryScope(branch string) string {
	if rest, ok := strings.CutPrefix(branch, "task/"); ok {
		name, _, _ := strings.Cut(rest, "/")
		return "task-" + name
	}
	return "branch-" + strings.ReplaceAll(branch, "/", "~")
}

// MemorySubject is the subject of a memory event.
func MemorySubject(scope, typ string) string { return "trellis.memory." + scope + "." + typ }

// MemoryFilter is the subject filter of a memory scope.
func MemoryFilter(scope string) string { return "trellis.memory." + scope + ".>" }

// ObservedPayload is the payload of an observed event.
type ObservedPayload struct {
	ObservationID string `json:"observation_id"`
	Branch        string `json:"branch"`
	Session       string `json:"session"`
	Type          string `json:"type"`
	Text          string `json:"text"`
	TaskID        string `json:"task_id,omitempty"`
	AgentID       string `json:"agent_id,omitempty"`
}

// FactRecord is a fact as a consolidation run creates it.
type FactRecord struct {
	FactID       string   `json:"fact_id"`
	FactText     string   `json:"fact_text"`
	Category     string   `json:"category"`
	Confidence   float64  `json:"confidence"`
	Branch       string   `json:"branch"`
	Observations []string `json:"source_observations,omitempty"`
	SourceFact   string   `json:"source_fact,omitempty"`
	TaskID       string   `json:"task_id,omitempty"`
	AgentID      string   `json:"agent_id,omitempty"`
	Session      string   `json:"session,omitempty"`
}

// FactConfidence records a confidence change.
type FactConfidence struct {
	FactID      string  `json:"fact_id"`
	From        float64 `json:"from"`
	To          float64 `json:"to"`
	Observation string  `json:"observation,omitempty"`
	SourceFact  string  `json:"source_fact,omitempty"`
}

// FactSupersession records a fact superseded by a duplicate.
type FactSupersession struct {
	FactID   string `json:"fact_id"`
	ParentID string `json:"parent_id"`
}

// ConsolidatedPayload is the payload of a consolidated event: the history
// record of one run and the fact changes it made.
type ConsolidatedPayload struct {
	RunID        string             `json:"run_id"`
	Type         string             `json:"type"` // session_end, agent_complete, task_checkpoint, merge
	TaskID       string             `json:"task_id,omitempty"`
	AgentID      string             `json:"agent_id,omitempty"`
	Session      string             `json:"session,omitempty"`
	SourceBranch string             `json:"source_branch"`
	TargetBranch string             `json:"target_branch"`
	Processed    []string           `json:"observations_processed"`
	Created      []FactRecord       `json:"created"`
	Updated      []FactConfidence   `json:"updated"`
	Deduplicated []string           `json:"deduplicated"`
	Superseded   []FactSupersession `json:"superseded"`
	Durable      []string           `json:"durable,omitempty"`
	Ephemeral    []string           `json:"ephemeral,omitempty"`
	Summary      string             `json:"summary"`
}

// Fact is a fact's current state.
type Fact struct {
	FactRecord
	Status    string    `json:"status"` // active, superseded, archived
	ParentID  string    `json:"parent_id,omitempty"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
	// Order is the fact's creation order within its scope.
	Order int `json:"-"`
}

// Observation is an observation as recorded.
type Observation struct {
	ObservedPayload
	Time time.Time `json:"time"`
	// Processed is set once a session consolidation took it in.
	Processed bool `json:"processed"`
}

// Run is a consolidation history record.
type Run struct {
	ConsolidatedPayload
	Time time.Time `json:"time"`
}

// MemoryState is one memory scope folded from its events.
type MemoryState struct {
	Scope        string
	Facts        map[string]*Fact
	Order        []string // fact ids in creation order
	Observations []*Observation
	Runs         []Run
}

// NewMemoryState returns an empty scope.
func NewMemoryState(scope string) *MemoryState {
	return &MemoryState{Scope: scope, Facts: map[string]*Fact{}}
}

// ActiveFacts returns the active facts of a branch in creation order.
func (m *MemoryState) ActiveFacts(branch string) []*Fact {
	var out []*Fact
	for _, id := range m.Order {
		if f := m.Facts[id]; f.Branch == branch && f.Status == "active" {
			out = append(out, f)
		}
	}
	return out
}

// ApplyMemory folds one memory event into m.
func ApplyMemory(m *MemoryState, rec Recorded) error {
	if rec.Schema > MemorySchema {
		return fmt.Errorf("event %s: schema %d is newer than this build understands (%d)", rec.ID, rec.Schema, MemorySchema)
	}
	at := rec.Time.UTC()
	switch rec.Type {
	case MemoryObserved:
		var p ObservedPayload
		if err := rec.DecodePayload(&p); err != nil {
			return err
		}
		m.Observations = append(m.Observations, &Observation{ObservedPayload: p, Time: at})
	case MemoryConsolidated:
		var p ConsolidatedPayload
		if err := rec.DecodePayload(&p); err != nil {
			return err
		}
		processed := map[string]bool{}
		for _, id := range p.Processed {
			processed[id] = true
		}
		for _, o := range m.Observations {
			if processed[o.ObservationID] {
				o.Processed = true
			}
		}
		for _, c := range p.Created {
			m.Facts[c.FactID] = &Fact{FactRecord: c, Status: "active", CreatedAt: at, UpdatedAt: at, Order: len(m.Order)}
			m.Order = append(m.Order, c.FactID)
		}
		for _, u := range p.Updated {
			if f, ok := m.Facts[u.FactID]; ok {
				f.Confidence, f.UpdatedAt = u.To, at
			}
		}
		for _, s := range p.Superseded {
			if f, ok := m.Facts[s.FactID]; ok {
				f.Status, f.ParentID, f.UpdatedAt = "superseded", s.ParentID, at
			}
		}
		m.Runs = append(m.Runs, Run{ConsolidatedPayload: p, Time: at})
	}
	return nil
}
