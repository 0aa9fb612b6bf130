package handlers

import (
	"context"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/agentmemory"
	"github.com/trellis/trellis/projections"
)

var _ trellis.MemoryService = (*Service)(nil)

// Memory returns the agent memory domain.
func (s *Service) Memory() *agentmemory.Service { return s.memory }

// MemoryHandler returns the agent-task and memory command handler.
func (s *Service) MemoryHandler() *agentmemory.Handler { return s.memory.Handler() }

// FactStore returns the fact-store projection.
func (s *Service) FactStore() *projections.FactStore { return s.memory.FactStore() }

// TaskViews returns the task-views projection.
func (s *Service) TaskViews() *projections.TaskViews { return s.memory.TaskViews() }

// TaskCreate implements trellis.MemoryService.
func (s *Service) TaskCreate(ctx context.Context, req trellis.AgentTaskCreateRequest) (*trellis.AgentTaskView, error) {
	return s.memory.TaskCreate(ctx, req)
}

// TaskJoin implements trellis.MemoryService.
func (s *Service) TaskJoin(ctx context.Context, req trellis.AgentTaskJoinRequest) (*trellis.AgentTaskJoinResult, error) {
	return s.memory.TaskJoin(ctx, req)
}

// TaskObjective implements trellis.MemoryService.
func (s *Service) TaskObjective(ctx context.Context, req trellis.AgentTaskObjectiveRequest) (*trellis.AgentTaskView, error) {
	return s.memory.TaskObjective(ctx, req)
}

// TaskCompleteAgent implements trellis.MemoryService.
func (s *Service) TaskCompleteAgent(ctx context.Context, req trellis.AgentCompleteRequest) (*trellis.ConsolidationReport, error) {
	return s.memory.TaskCompleteAgent(ctx, req)
}

// TaskComplete implements trellis.MemoryService.
func (s *Service) TaskComplete(ctx context.Context, req trellis.AgentTaskCompleteRequest) (*trellis.ConsolidationReport, error) {
	return s.memory.TaskComplete(ctx, req)
}

// TaskShow implements trellis.MemoryService.
func (s *Service) TaskShow(ctx context.Context, task string) (*trellis.AgentTaskView, error) {
	return s.memory.TaskShow(ctx, task)
}

// TaskList implements trellis.MemoryService.
func (s *Service) TaskList(ctx context.Context, req trellis.AgentTaskListRequest) ([]trellis.AgentTaskView, error) {
	return s.memory.TaskList(ctx, req)
}

// TaskContext implements trellis.MemoryService.
func (s *Service) TaskContext(ctx context.Context, task string) (*trellis.AgentTaskContextView, error) {
	return s.memory.TaskContext(ctx, task)
}

// Observe implements trellis.MemoryService.
func (s *Service) Observe(ctx context.Context, req trellis.ObserveRequest) (*trellis.ObservationView, error) {
	return s.memory.Observe(ctx, req)
}

// Consolidate implements trellis.MemoryService.
func (s *Service) Consolidate(ctx context.Context, req trellis.ConsolidateRequest) (*trellis.ConsolidationReport, error) {
	return s.memory.Consolidate(ctx, req)
}

// Facts implements trellis.MemoryService.
func (s *Service) Facts(ctx context.Context, req trellis.FactsRequest) ([]trellis.FactView, error) {
	return s.memory.Facts(ctx, req)
}

// History implements trellis.MemoryService.
func (s *Service) History(ctx context.Context, req trellis.HistoryRequest) ([]trellis.ConsolidationReport, error) {
	return s.memory.History(ctx, req)
}
