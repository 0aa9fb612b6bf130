package events

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"
)

// PurgeBefore removes the messages of stream whose subject matches filter
// and whose sequence is below seq, in one request (the server removes
// them under one lock and syncs once, where deleting them one by one
// syncs each), and returns how many it removed. A filter matching nothing
// below seq removes nothing: purging again is harmless.
func (s *Store) PurgeBefore(ctx context.Context, stream, filter string, seq uint64) (uint64, error) {
	if filter == "" || seq == 0 {
		return 0, fmt.Errorf("purge %s: a subject filter and a sequence bound are required", stream)
	}
	body, err := json.Marshal(struct {
		Filter string `json:"filter"`
		Seq    uint64 `json:"seq"`
	}{filter, seq})
	if err != nil {
		return 0, err
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.RequestTimeout)
	defer cancel()
	reply, err := s.nc.RequestWithContext(ctx, "$JS.API.STREAM.PURGE."+stream, body)
	if err != nil {
		return 0, fmt.Errorf("purge %s of %s: %w", filter, stream, err)
	}
	var resp struct {
		Success bool                `json:"success"`
		Purged  uint64              `json:"purged"`
		Error   *jetstream.APIError `json:"error"`
	}
	if err := json.Unmarshal(reply.Data, &resp); err != nil {
		return 0, fmt.Errorf("purge %s of %s: %w", filter, stream, err)
	}
	if resp.Error != nil {
		return 0, fmt.Errorf("purge %s of %s: %w", filter, stream, resp.Error)
	}
	if !resp.Success {
		return 0, fmt.Errorf("purge %s of %s: the server did not report success", filter, stream)
	}
	return resp.Purged, nil
}
