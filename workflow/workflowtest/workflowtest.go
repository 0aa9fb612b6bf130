package workflowtest

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"testing"

	"github.com/trellis/trellis/audit"
	"github.com/trellis/trellis/events"
	"github.com/trellis/trellis/workflow"
)

// ReadExport reads the run events of an audit export (JSON Lines).
func ReadExport(r io.Reader) ([]workflow.History, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 256<<20)
	var recs []events.Recorded
	for n := 1; sc.Scan(); n++ {
		var line audit.ExportLine
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			return nil, fmt.Errorf("export line %d: %w", n, err)
		}
		if line.Event == nil || line.Stream != events.StreamWorkflows {
			continue
		}
		recs = append(recs, events.Recorded{Envelope: *line.Event, Stream: line.Stream, Subject: line.Subject, Seq: line.Seq})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read export: %w", err)
	}
	return workflow.Histories(recs), nil
}

// ReadExportFile reads the run events of an audit export file.
func ReadExportFile(path string) ([]workflow.History, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ReadExport(f)
}

// ReadLog reads every run's events from a live log.
func ReadLog(ctx context.Context, store *events.Store) ([]workflow.History, error) {
	var recs []events.Recorded
	err := store.Read(ctx, events.StreamWorkflows, "trellis.workflows.run.>", 0, func(r events.Recorded) error {
		recs = append(recs, r)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read the workflow log: %w", err)
	}
	return workflow.Histories(recs), nil
}

// Check replays the histories of workflow name through fn and returns the
// first divergence of every run that leaves its journal (none: the change
// is safe for these runs).
func Check[I, O any](name string, fn workflow.Func[I, O], hs []workflow.History) []workflow.Divergence {
	var out []workflow.Divergence
	for _, h := range hs {
		if d := workflow.Replay(name, fn, h); d != nil {
			out = append(out, *d)
		}
	}
	return out
}

// Require fails t with each divergence of the histories of name under fn.
func Require[I, O any](t testing.TB, name string, fn workflow.Func[I, O], hs []workflow.History) {
	t.Helper()
	for _, d := range Check(name, fn, hs) {
		t.Errorf("run %s (%s v%d): %s", d.RunID, d.Workflow, d.Version, d.Message)
	}
}
