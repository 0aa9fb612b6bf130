package natsapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/codememory"
	"github.com/trellis/trellis/events"
	"github.com/trellis/trellis/handlers"
	"github.com/trellis/trellis/taskqueue"
)

// auditRequest names the aggregate to audit.
type auditRequest struct {
	ID string `json:"id"`
}

// ingestRequest asks the server to ingest a directory it can read inside
// its workspace roots.
type ingestRequest struct {
	Root string `json:"root"`
	Repo string `json:"repo,omitempty"`
}

// logOps are the reads of the log a client without JetStream access
// needs (audit) and ingest, which the server runs on a directory it can
// read (a client with a token may not append chunk events itself).
func logOps(svc *handlers.Service) map[string]func(context.Context, []byte) (any, error) {
	return map[string]func(context.Context, []byte) (any, error){
		OpAudit: handler(func(ctx context.Context, r auditRequest) ([]events.Recorded, error) {
			return svc.Audit(ctx, r.ID)
		}),
		OpIngest: handler(func(ctx context.Context, r ingestRequest) (*codememory.IngestSummary, error) {
			if r.Root == "" {
				return nil, trellis.FieldError("root", "must name a directory the server can read")
			}
			// A request reads only inside the server's workspace roots.
			root, err := svc.VineHandler().Inside("root", r.Root)
			if err != nil {
				return nil, err
			}
			return codememory.Ingest(ctx, svc.Store(), codememory.IngestConfig{Root: root, Repo: r.Repo})
		}),
	}
}

// Audit returns every event of an aggregate (see audit.AggregateEvents).
func (c *Client) Audit(ctx context.Context, id string) ([]events.Recorded, error) {
	out, err := callInto[[]events.Recorded](ctx, c, OpAudit, auditRequest{ID: id})
	if err != nil {
		return nil, err
	}
	return *out, nil
}

// Ingest asks the server to ingest root, a directory the server reads
// (the same path on its machine or volume).
func (c *Client) Ingest(ctx context.Context, root, repo string) (*codememory.IngestSummary, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	return callInto[codememory.IngestSummary](ctx, c, OpIngest, ingestRequest{Root: root, Repo: repo})
}

// The export is streamed: the server answers one request with messages of
// at most exportChunk bytes of JSONL, each with a sequence header, and an
// empty last one with headerExportEnd (or an error body).
const (
	exportChunk     = 256 << 10
	headerExportSeq = "Trellis-Export-Seq"
	headerExportEnd = "Trellis-Export-End"
)

// chunkWriter sends what is written in messages of at most exportChunk
// bytes.
type chunkWriter struct {
	nc    *nats.Conn
	reply string
	buf   bytes.Buffer
	n     int
}

func (w *chunkWriter) Write(p []byte) (int, error) {
	w.buf.Write(p)
	for w.buf.Len() >= exportChunk {
		if err := w.send(w.buf.Next(exportChunk), false); err != nil {
			return 0, err
		}
	}
	return len(p), nil
}

func (w *chunkWriter) send(data []byte, end bool) error {
	m := nats.NewMsg(w.reply)
	m.Data = append([]byte(nil), data...)
	m.Header.Set(headerExportSeq, strconv.Itoa(w.n))
	if end {
		m.Header.Set(headerExportEnd, "1")
	}
	w.n++
	return w.nc.PublishMsg(m)
}

// serveExport answers one export request.
func serveExport(nc *nats.Conn, svc *handlers.Service, cfg ServeConfig, m *nats.Msg) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	ctx, err := authorize(ctx, cfg.Auth, m, OpQueueExport)
	if err != nil {
		respond(m, nil, err, cfg.Logger)
		return
	}
	if replyRefusal(m) != "" {
		return
	}
	w := &chunkWriter{nc: nc, reply: m.Reply}
	if _, err := taskqueue.ExportTasks(ctx, svc.Store(), w); err != nil {
		respond(m, nil, err, cfg.Logger)
		return
	}
	if err := w.send(w.buf.Bytes(), true); err != nil {
		cfg.Logger.Warn("export reply", "err", err)
	}
}

// Export writes the JSONL task-packet log (see taskqueue.ExportTasks) to w,
// streamed from the server.
func (c *Client) Export(ctx context.Context, w io.Writer) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	inbox := c.nc.NewRespInbox()
	sub, err := c.nc.SubscribeSync(inbox)
	if err != nil {
		return trellis.Errorf(trellis.CodeUnavailable, "export: %w", err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	_ = sub.SetPendingLimits(-1, -1)
	m := c.request(Prefix+OpQueueExport, []byte("{}"), time.Time{})
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
		if msg.Header.Get(headerExportSeq) == "" {
			var body struct {
				Error *replyError `json:"error"`
			}
			if json.Unmarshal(msg.Data, &body) == nil && body.Error != nil {
				return &trellis.Error{Code: trellis.Code(body.Error.Code), Field: body.Error.Field, Message: body.Error.Message}
			}
			if msg.Header.Get("Status") == "503" || len(msg.Data) == 0 {
				return trellis.Errorf(trellis.CodeUnavailable, "no trellis server answers on %s", Prefix+OpQueueExport)
			}
			return trellis.Errorf(trellis.CodeInternal, "export: unexpected reply")
		}
		if got := msg.Header.Get(headerExportSeq); got != strconv.Itoa(n) {
			return trellis.Errorf(trellis.CodeUnavailable, "export: part %s arrived where %d was due (a lost message): run it again", got, n)
		}
		if _, err := w.Write(msg.Data); err != nil {
			return fmt.Errorf("export: %w", err)
		}
		if msg.Header.Get(headerExportEnd) != "" {
			return nil
		}
	}
}
