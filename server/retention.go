package server

import (
	"github.com/trellis/trellis"
	"github.com/trellis/trellis/audit"
	"github.com/trellis/trellis/retention"
)

// retentionConfig checks the retention settings before anything starts
// (nil when the server does not prune): a positive retention with an
// archive directory that can be written, an interval within bounds.
func retentionConfig(cfg Config) (*retention.LoopConfig, error) {
	switch {
	case cfg.Retention == 0 && cfg.Archive == "" && cfg.PruneEvery == 0 && cfg.PruneRate == 0:
		return nil, nil
	case cfg.Retention == 0 && cfg.Archive != "":
		return nil, trellis.FieldError("retention", "--archive needs --retention: how long finished tasks stay in the log")
	case cfg.Retention == 0 && cfg.PruneRate != 0:
		return nil, trellis.FieldError("retention", "--prune-rate needs --retention: how long finished tasks stay in the log")
	case cfg.Retention == 0:
		return nil, trellis.FieldError("retention", "--prune-every needs --retention: how long finished tasks stay in the log")
	case cfg.PruneRate < 0 || cfg.PruneRate > retention.MaxRemoveRate:
		return nil, trellis.FieldError("prune_rate", "must be between 0 (unpaced) and %d messages a second, got %d", retention.MaxRemoveRate, cfg.PruneRate)
	case cfg.Archive == "":
		return nil, trellis.FieldError("archive", "is required with --retention: the directory pruned events are archived to before they leave the log")
	}
	rc := &retention.LoopConfig{Options: retention.Options{OlderThan: cfg.Retention, Archive: cfg.Archive, Actor: "trellis-retention", RemoveRate: cfg.PruneRate},
		Every: cfg.PruneEvery, Logger: cfg.Logger}
	if err := rc.Check(); err != nil {
		return nil, err
	}
	return rc, nil
}

// startRetention starts the retention loop: prune records keyed with the
// data directory's audit key (the one `audit verify` reads), the loop's
// metrics on /metrics.
func (s *Server) startRetention(rc *retention.LoopConfig) error {
	key, err := audit.AnchorKey(s.cfg.DataDir, true)
	if err != nil {
		return trellis.Errorf(trellis.CodeInternal, "retention: the audit key of %s: %w", s.cfg.DataDir, err)
	}
	rc.Options.Key = key
	rc.Metrics = s.registry
	l, err := retention.StartLoop(s.store, *rc)
	if err != nil {
		return err
	}
	s.retention = l
	s.cfg.Logger.Info("retention: pruning finished tasks", "older_than", rc.Options.OlderThan, "every", rc.Every, "archive", rc.Options.Archive)
	return nil
}

// Retention returns what the retention loop did so far (false when the
// server does not prune).
func (s *Server) Retention() (retention.Status, bool) {
	if s.retention == nil {
		return retention.Status{}, false
	}
	return s.retention.Status(), true
}
