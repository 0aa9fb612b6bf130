package audit

import (
	"log/slog"
	"time"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/events"
)

// Config configures a Service.
type Config struct {
	// DataDir holds the audit anchors (<data>/audit/) and the as-of
	// boards' cache (<data>/asof/).
	DataDir string
	// AnchorInterval > 0 records the log's heads as a keyed anchor in
	// DataDir at start, every interval and at close (see RecordAnchor;
	// a server uses AnchorInterval). Zero: never (a replay's directory).
	AnchorInterval time.Duration
	// Logger receives the anchor loop's warnings (default slog.Default()).
	Logger *slog.Logger
}

// Service answers audit queries and as-of reads from the log, and records
// the anchors of a running server.
type Service struct {
	store *events.Store
	cfg   Config
	// asOf serializes as-of reads (see ListAsOf).
	asOf asOfBoards
	// anchors records the log's heads (see Start).
	anchors *anchorLoop
}

var _ trellis.AuditService = (*Service)(nil)

// New returns the audit service of store; Start records its anchors.
func New(store *events.Store, cfg Config) *Service {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Service{store: store, cfg: cfg}
}

// Start records an anchor now and every cfg.AnchorInterval until Close
// (nothing when the interval or the data directory is unset).
func (s *Service) Start() {
	if s.cfg.DataDir != "" && s.cfg.AnchorInterval > 0 && s.anchors == nil {
		s.anchors = startAnchorLoop(s.store, s.cfg.DataDir, s.cfg.AnchorInterval, s.cfg.Logger)
	}
}

// Close stops the anchor loop after recording a last anchor.
func (s *Service) Close() {
	s.anchors.close()
	s.anchors = nil
}
