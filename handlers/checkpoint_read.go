package handlers

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"

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
	data, err := os.ReadFile(s.checkpoints.Path(taskID))
	if errors.Is(err, fs.ErrNotExist) {
		return "", trellis.Errorf(trellis.CodeNotFound, "task %s has no checkpoint (it has not finished, or does not exist)", taskID)
	}
	if err != nil {
		return "", fmt.Errorf("read checkpoint of %s: %w", taskID, err)
	}
	return string(data), nil
}
