package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/codememory"
	"github.com/trellis/trellis/events"
	"github.com/trellis/trellis/handlers/natsapi"
)

// Audit returns every event of an aggregate (see audit.AggregateEvents).
func (c *API) Audit(ctx context.Context, id string) ([]events.Recorded, error) {
	out, err := callInto[[]events.Recorded](ctx, c, natsapi.OpAudit, natsapi.AuditRequest{ID: id})
	if err != nil {
		return nil, err
	}
	return *out, nil
}

// Ingest asks the server to ingest root, a directory the server reads
// (the same path on its machine or volume).
func (c *API) Ingest(ctx context.Context, root, repo string) (*codememory.IngestSummary, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	return callInto[codememory.IngestSummary](ctx, c, natsapi.OpIngest, natsapi.IngestRequest{Root: root, Repo: repo})
}

// Export writes the JSONL task-packet log (see taskqueue.ExportTasks) to w,
// streamed from the server.
func (c *API) Export(ctx context.Context, w io.Writer) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	inbox := c.nc.NewRespInbox()
	sub, err := c.nc.SubscribeSync(inbox)
	if err != nil {
		return trellis.Errorf(trellis.CodeUnavailable, "export: %w", err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	_ = sub.SetPendingLimits(-1, -1)
	m := c.request(natsapi.Prefix+natsapi.OpQueueExport, []byte("{}"), time.Time{})
	m.Reply = inbox
	if err := c.nc.PublishMsg(m); err != nil {
		return trellis.Errorf(trellis.CodeUnavailable, "export: %w", err)
	}
	for n := 0; ; n++ {
		msg, err := sub.NextMsgWithContext(ctx)
		if err != nil {
			if errors.Is(err, context.DeadlineExceeded) {
				return trellis.Errorf(trellis.CodeUnavailable, "export: the server stopped answering")
			}
			return trellis.Errorf(trellis.CodeUnavailable, "export: %w", err)
		}
		if msg.Header.Get(natsapi.HeaderExportSeq) == "" {
			var body struct {
				Error *natsapi.ReplyError `json:"error"`
			}
			if json.Unmarshal(msg.Data, &body) == nil && body.Error != nil {
				return &trellis.Error{Code: trellis.Code(body.Error.Code), Field: body.Error.Field, Message: body.Error.Message}
			}
			if msg.Header.Get("Status") == "503" || len(msg.Data) == 0 {
				return trellis.Errorf(trellis.CodeUnavailable, "no trellis server answers on %s", natsapi.Prefix+natsapi.OpQueueExport)
			}
			return trellis.Errorf(trellis.CodeInternal, "export: unexpected reply")
		}
		if got := msg.Header.Get(natsapi.HeaderExportSeq); got != strconv.Itoa(n) {
			return trellis.Errorf(trellis.CodeUnavailable, "export: part %s arrived where %d was due (a lost message): run it again", got, n)
		}
		if _, err := w.Write(msg.Data); err != nil {
			return fmt.Errorf("export: %w", err)
		}
		if msg.Header.Get(natsapi.HeaderExportEnd) != "" {
			return nil
		}
	}
}
