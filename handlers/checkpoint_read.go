package handlers

import (
	"context"

	"github.com/trellis/trellis"
)

// CheckpointMarkdown returns a finished task's Markdown checkpoint (seed
// 000's format) as the checkpoint projection wrote it, once that
// projection has applied the whole queue stream. A task that has not
// finished (or does not exist) has none: not found.
func (s *Service) CheckpointMarkdown(ctx context.Context, taskID string) (string, error) {
	if err := trellis.ValidateTaskID("id", taskID); err != nil {
		return "", err
	}
	for _, r := range s.runners {
		if r.Projection() == s.checkpoints {
			if err := s.catchUp(ctx, r); err != nil {
				return "", err
			}
		}
	}
	return s.checkpoints.Markdown(taskID)
}
