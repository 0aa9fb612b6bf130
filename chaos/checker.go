package chaos

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// Check is what the checker found after a run. It is computed from the
// Trellis log (read with `trellis audit --queue`), `trellis audit verify`,
// the ledger the handlers wrote and the producers' acknowledged adds.
type Check struct {
	Acked          int    // acknowledged adds
	Lost           int    // acknowledged adds with no `added` event in the log
	CompletedTwice int    // tasks with more than one `completed` event
	Executions     int    // ledger lines
	ExecutedTwice  int    // tasks the handler ran more than once (at-least-once: reported, not a failure)
	Stuck          int    // acknowledged adds not completed by the deadline
	Verify         string // "ok" or what audit verify found
	// Unreadable: the log could not be read at all (every acknowledged
	// add then counts as lost: nothing shows it is there).
	Unreadable bool
	// Unanswered is how many of the API pings sent once the cluster was
	// whole again got no answer (see pingAPI): each should have.
	Unanswered int
	Examples   []string // a few offending task ids, for the report
}

// Failed reports whether the run broke a promise: an acknowledged add
// lost, a task completed twice, a task stuck, the log failing verify, or
// an API request left unanswered after the repair.
func (c Check) Failed() bool {
	return c.Lost > 0 || c.CompletedTwice > 0 || c.Stuck > 0 || c.Verify != "ok" || c.Unanswered > 0
}

// logEvent is the part of an audit line the checker reads.
type logEvent struct {
	Type        string    `json:"type"`
	AggregateID string    `json:"aggregate_id"`
	Stored      time.Time `json:"stored"` // when the stream stored it (the leader's clock)
}

// readLog returns the queue's events as `trellis audit` prints them.
func readLog(ctx context.Context, trellisBin, urls, dir string) ([]logEvent, error) {
	cctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(cctx, trellisBin, "audit", "--queue", Queue, "--jsonl", "--nats-url", urls, "--data", dir)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("trellis audit: %w: %s", err, strings.TrimSpace(errb.String()))
	}
	var evs []logEvent
	sc := bufio.NewScanner(&out)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var e logEvent
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			return nil, fmt.Errorf("audit line %q: %w", sc.Text(), err)
		}
		evs = append(evs, e)
	}
	return evs, sc.Err()
}

// verifyLog runs `trellis audit verify` and summarizes its answer,
// asking again for up to a minute while a stream cannot answer (a leader
// being elected after a fault): only a verdict or a lasting error counts.
func verifyLog(ctx context.Context, trellisBin, urls, dir string) string {
	deadline := time.Now().Add(time.Minute)
	for {
		v := verifyOnce(ctx, trellisBin, urls, dir)
		if !strings.HasPrefix(v, "error: unavailable") || time.Now().After(deadline) || ctx.Err() != nil {
			return v
		}
		time.Sleep(time.Second)
	}
}

func verifyOnce(ctx context.Context, trellisBin, urls, dir string) string {
	cctx, cancel := context.WithTimeout(ctx, 120*time.Second)
	defer cancel()
	cmd := exec.CommandContext(cctx, trellisBin, "audit", "verify", "--json", "--nats-url", urls, "--data", dir)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var rep struct {
		OK       bool              `json:"ok"`
		Findings []json.RawMessage `json:"findings"`
		Omitted  int               `json:"omitted"`
	}
	if jerr := json.Unmarshal(out.Bytes(), &rep); jerr != nil {
		msg := strings.TrimSpace(errb.String())
		if i := strings.LastIndex(msg, "\n"); i >= 0 {
			msg = msg[i+1:]
		}
		if i := strings.Index(msg, "nats: API error"); i >= 0 {
			msg = strings.TrimSpace(msg[:i]) + " " + msg[strings.LastIndex(msg, "description=")+len("description="):]
		}
		return "error: " + strings.TrimPrefix(msg, "trellis: ")
	}
	if rep.OK && err == nil {
		return "ok"
	}
	return fmt.Sprintf("%d findings", len(rep.Findings)+rep.Omitted)
}

// readLines returns the non-empty lines of a file (none if it is missing).
func readLines(path string) ([]string, error) {
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var lines []string
	for _, l := range strings.Split(string(b), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	return lines, nil
}

// acked reads the acknowledged adds of every producer in dir.
func ackedAdds(dir string) ([]string, error) {
	files, _ := filepath.Glob(filepath.Join(dir, "acked-*"))
	var ids []string
	for _, f := range files {
		lines, err := readLines(f)
		if err != nil {
			return nil, err
		}
		ids = append(ids, lines...)
	}
	return ids, nil
}

// resumeAfter is how long completions stopped after a fault at: the
// longest gap between successive completions the stream stored from at
// until end (zero: the end of the log), counting from at itself (-1: no
// completion in the window). The stored time, not the event's own time
// (a completion decided before a fault may be stored only once a new
// leader takes it), and the longest gap, not the first completion (the
// dying leader's last proposals can still be stored a few milliseconds
// after the fault).
func resumeAfter(evs []logEvent, at, end time.Time) time.Duration {
	var times []time.Time
	for _, e := range evs {
		if e.Type == "completed" && e.Stored.After(at) && (end.IsZero() || e.Stored.Before(end)) {
			times = append(times, e.Stored)
		}
	}
	if len(times) == 0 {
		return -1
	}
	sort.Slice(times, func(a, b int) bool { return times[a].Before(times[b]) })
	gap, prev := time.Duration(0), at
	for _, t := range times {
		gap, prev = max(gap, t.Sub(prev)), t
	}
	return gap
}

// check folds the log and the ledger.
func check(evs []logEvent, acked, ledger []string) Check {
	c := Check{Acked: len(acked), Executions: len(ledger)}
	added := map[string]bool{}
	completed := map[string]int{}
	for _, e := range evs {
		switch e.Type {
		case "added":
			added[e.AggregateID] = true
		case "completed":
			completed[e.AggregateID]++
		}
	}
	runs := map[string]int{}
	for _, l := range ledger {
		runs[strings.Fields(l)[0]]++
	}
	for _, n := range runs {
		if n > 1 {
			c.ExecutedTwice++
		}
	}
	ids := append([]string(nil), acked...)
	sort.Strings(ids)
	for _, id := range ids {
		switch {
		case !added[id]:
			c.Lost++
			c.Examples = append(c.Examples, "lost "+id)
		case completed[id] == 0:
			c.Stuck++
			c.Examples = append(c.Examples, "stuck "+id)
		}
	}
	for id, n := range completed {
		if n > 1 {
			c.CompletedTwice++
			c.Examples = append(c.Examples, fmt.Sprintf("completed %dx %s", n, id))
		}
	}
	if len(c.Examples) > 5 {
		c.Examples = c.Examples[:5]
	}
	return c
}
