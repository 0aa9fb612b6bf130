package natsapi

import (
	"bytes"
	"context"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/codememory"
	"github.com/trellis/trellis/events"
	"github.com/trellis/trellis/taskqueue"
)

// logOps are the reads of the log a client without JetStream access
// needs (audit) and ingest, which the server runs on a directory it can
// read (a client with a token may not append chunk events itself).
func logOps(svc Service) map[string]func(context.Context, []byte) (any, error) {
	return map[string]func(context.Context, []byte) (any, error){
		OpAudit: handler(func(ctx context.Context, r AuditRequest) ([]events.Recorded, error) {
			return svc.Audit(ctx, r.ID)
		}),
		OpIngest: handler(func(ctx context.Context, r IngestRequest) (*codememory.IngestSummary, error) {
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

// The export is streamed: the server answers one request with messages of
// at most exportChunk bytes of JSONL, each with a sequence header, and an
// empty last one with HeaderExportEnd (or an error body).
const (
	exportChunk     = 256 << 10
	HeaderExportSeq = "Trellis-Export-Seq"
	HeaderExportEnd = "Trellis-Export-End"
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
	m.Header.Set(HeaderExportSeq, strconv.Itoa(w.n))
	if end {
		m.Header.Set(HeaderExportEnd, "1")
	}
	w.n++
	return w.nc.PublishMsg(m)
}

// serveExport answers one export request.
func serveExport(nc *nats.Conn, svc Service, cfg ServeConfig, m *nats.Msg) {
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
