package projections

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/trellis/trellis"
)

// Markdown returns a finished task's Markdown checkpoint as this
// projection wrote it. A task that has not finished (or does not exist)
// has none: not found. Callers that must see every finished task wait
// for the projection to apply the queue stream first.
func (c *Checkpoints) Markdown(taskID string) (string, error) {
	data, err := os.ReadFile(c.Path(taskID))
	if errors.Is(err, fs.ErrNotExist) {
		return "", trellis.Errorf(trellis.CodeNotFound, "task %s has no checkpoint (it has not finished, or does not exist)", taskID)
	}
	if err != nil {
		return "", fmt.Errorf("read checkpoint of %s: %w", taskID, err)
	}
	return string(data), nil
}
