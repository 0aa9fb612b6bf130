package projections

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/trellis/trellis/events"
)

// FactStore is the read model of agent memory: every scope's facts,
// observations and consolidation history, folded from TRELLIS_MEMORY.
type FactStore struct {
	path string

	mu     sync.RWMutex
	scopes map[string]*events.MemoryState
}

type factStoreSnapshot struct {
	Version int           `json:"version"`
	LastSeq uint64        `json:"last_seq"`
	Scopes  []scopeRecord `json:"scopes"`
}

type scopeRecord struct {
	Scope        string                `json:"scope"`
	Facts        []*events.Fact        `json:"facts"`
	Observations []*events.Observation `json:"observations"`
	Runs         []events.Run          `json:"runs"`
}

// NewFactStore returns the projection persisted at <dir>/facts.json.
func NewFactStore(dir string) *FactStore {
	return &FactStore{path: filepath.Join(dir, "facts.json"), scopes: map[string]*events.MemoryState{}}
}

// Name implements Projection.
func (s *FactStore) Name() string { return "facts" }

// Stream implements Projection.
func (s *FactStore) Stream() string { return events.StreamMemory }

// Load implements Projection.
func (s *FactStore) Load() (uint64, error) {
	var snap factStoreSnapshot
	if ok, err := readSnapshot(s.path, "fact store", &snap); !ok || err != nil {
		return 0, err
	}
	if snap.Version != 1 {
		return 0, nil
	}
	scopes := map[string]*events.MemoryState{}
	for _, sc := range snap.Scopes {
		m := events.NewMemoryState(sc.Scope)
		for i, f := range sc.Facts {
			f.Order = i
			m.Facts[f.FactID] = f
			m.Order = append(m.Order, f.FactID)
		}
		m.Observations, m.Runs = sc.Observations, sc.Runs
		scopes[sc.Scope] = m
	}
	s.mu.Lock()
	s.scopes = scopes
	s.mu.Unlock()
	return snap.LastSeq, nil
}

// Apply implements Projection.
func (s *FactStore) Apply(rec events.Recorded) error {
	if rec.AggregateID == "" {
		return fmt.Errorf("event #%d on %s names no scope: %w", rec.Seq, rec.Subject, events.ErrBadEvent)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	m, ok := s.scopes[rec.AggregateID]
	if !ok {
		m = events.NewMemoryState(rec.AggregateID)
		s.scopes[rec.AggregateID] = m
	}
	return events.ApplyMemory(m, rec)
}

// Save implements Projection.
func (s *FactStore) Save(seq uint64) error {
	s.mu.RLock()
	snap := factStoreSnapshot{Version: 1, LastSeq: seq}
	names := make([]string, 0, len(s.scopes))
	for n := range s.scopes {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		m := s.scopes[n]
		rec := scopeRecord{Scope: n, Observations: m.Observations, Runs: m.Runs}
		for _, id := range m.Order {
			rec.Facts = append(rec.Facts, m.Facts[id])
		}
		snap.Scopes = append(snap.Scopes, rec)
	}
	defer s.mu.RUnlock()
	return writeSnapshot(s.path, snap)
}

// Reset implements Projection.
func (s *FactStore) Reset() error {
	s.mu.Lock()
	s.scopes = map[string]*events.MemoryState{}
	s.mu.Unlock()
	return removeFile(s.path)
}

// FactFilter selects facts; Scope, when set, only those of one memory
// scope (a task's branch names the branches of every task of its name,
// its scope only those of one task).
type FactFilter struct {
	Branch, Status, Category, Query, TaskID, Scope string
}

// Facts returns the facts matching f, in creation order within each scope
// (scopes by name).
func (s *FactStore) Facts(f FactFilter) []events.Fact {
	s.mu.RLock()
	defer s.mu.RUnlock()
	q := strings.ToLower(f.Query)
	var out []events.Fact
	for _, name := range s.sortedScopes() {
		if f.Scope != "" && name != f.Scope {
			continue
		}
		m := s.scopes[name]
		for _, id := range m.Order {
			fact := m.Facts[id]
			switch {
			case f.Branch != "" && fact.Branch != f.Branch,
				f.Status != "" && fact.Status != f.Status,
				f.Category != "" && fact.Category != f.Category,
				f.TaskID != "" && fact.TaskID != f.TaskID,
				q != "" && !strings.Contains(strings.ToLower(fact.FactText), q):
				continue
			}
			out = append(out, *fact)
		}
	}
	return out
}

// Runs returns the consolidation history, oldest first, optionally for one
// task.
func (s *FactStore) Runs(taskID string) []events.Run {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var out []events.Run
	for _, name := range s.sortedScopes() {
		for _, r := range s.scopes[name].Runs {
			if taskID == "" || r.TaskID == taskID {
				out = append(out, r)
			}
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Time.Before(out[j].Time) })
	return out
}

// SessionBranches returns, per scope, the branches a session has
// unprocessed observations on.
func (s *FactStore) SessionBranches(session string) map[string][]string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := map[string][]string{}
	for name, m := range s.scopes {
		seen := map[string]bool{}
		for _, o := range m.Observations {
			if o.Session == session && !o.Processed && !seen[o.Branch] {
				seen[o.Branch] = true
				out[name] = append(out[name], o.Branch)
			}
		}
	}
	return out
}

func (s *FactStore) sortedScopes() []string {
	names := make([]string, 0, len(s.scopes))
	for n := range s.scopes {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
