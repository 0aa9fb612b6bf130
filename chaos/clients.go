package chaos

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"sort"
	"strings"
	"time"
)

// partitionClients cuts the nodes the first serve and the first pool are
// attached to (3 nodes: n1 alone; 5: n1 and n2) off the other nodes,
// which keep the quorum; every node still reaches the clients, so those
// two stay connected to a node without the quorum. They must move to a
// node of the majority (see package failover) rather than wait for the
// heal: clientStalls tells how long each waited.
func partitionClients(ctx context.Context, c *Cluster, _ *rand.Rand) (string, func(context.Context) error, error) {
	n := len(c.Nodes)
	side := []int{serveNode(0, n)}
	if w := workerNode(0, n); !slices.Contains(side, w) {
		side = append(side, w)
	}
	slices.Sort(side)
	var rest []int
	for i := 1; i <= n; i++ {
		if !slices.Contains(side, i) {
			rest = append(rest, i)
		}
	}
	p := Partition{Sides: [2][]int{side, rest}}
	l, _, err := c.StreamLeader(ctx)
	if err != nil {
		return "", nil, err
	}
	mend, err := cutPartition(ctx, c, p)
	if err != nil {
		return "", nil, err
	}
	return fmt.Sprintf("partitioned %s: serve1 and worker1's nodes cut off (queue stream leader n%d)", p, l), mend, nil
}

// clientStalls describes, for the fault started at and ending at end
// (zero: the run's end), each pool's longest stall of its own
// completions ("task done" in its log, measured as resumeAfter does),
// when each pool and serve moved its connection (package failover) and
// when each serve left the API and served it again (its quorum watch's
// lines), so that a client stuck on a cut-off node shows even while the
// other pool keeps completions going.
func (c *Cluster) clientStalls(at, end time.Time) []string {
	in := func(t time.Time) bool { return t.After(at) && (end.IsZero() || t.Before(end)) }
	var out []string
	for i, p := range c.Workers {
		var times []time.Time
		for _, l := range logLines(p.log, `msg="task done"`) {
			if in(l) {
				times = append(times, l)
			}
		}
		what := "no completion"
		if len(times) > 0 {
			sort.Slice(times, func(a, b int) bool { return times[a].Before(times[b]) })
			gap, prev := time.Duration(0), at
			for _, t := range times {
				gap, prev = max(gap, t.Sub(prev)), t
			}
			what = fmt.Sprintf("longest stall %.1f s", gap.Seconds())
		}
		if moved := firstLine(p.log, "moving the connection", at, end); !moved.IsZero() {
			what += fmt.Sprintf(", moved at +%.1f s", moved.Sub(at).Seconds())
		}
		out = append(out, fmt.Sprintf("%s (n%d) %s", p.Name, workerNode(i, len(c.Nodes)), what))
	}
	for i, p := range c.Serves {
		what := fmt.Sprintf("%s (n%d) kept the API", p.Name, serveNode(i, len(c.Nodes)))
		left := firstLine(p.log, "leaving the API queue group", at, end)
		if !left.IsZero() {
			what = fmt.Sprintf("%s (n%d) left the API at +%.1f s", p.Name, serveNode(i, len(c.Nodes)), left.Sub(at).Seconds())
		}
		if moved := firstLine(p.log, "moving the connection", at, end); !moved.IsZero() {
			what += fmt.Sprintf(", moved at +%.1f s", moved.Sub(at).Seconds())
		}
		if back := firstLine(p.log, "serving the API", left, end); !left.IsZero() && !back.IsZero() {
			what += fmt.Sprintf(", served it again at +%.1f s", back.Sub(at).Seconds())
		}
		out = append(out, what)
	}
	return out
}

// firstLine returns the time of the first line of a log containing
// marker after after and before end (zero: none).
func firstLine(path, marker string, after, end time.Time) time.Time {
	for _, l := range logLines(path, marker) {
		if l.After(after) && (end.IsZero() || l.Before(end)) {
			return l
		}
	}
	return time.Time{}
}

// logLines returns the times of the lines of a Trellis log (slog text:
// "time=... level=... msg=...") that contain marker.
func logLines(path, marker string) []time.Time {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []time.Time
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "time=") || !strings.Contains(line, marker) {
			continue
		}
		stamp, _, _ := strings.Cut(strings.TrimPrefix(line, "time="), " ")
		if t, err := time.Parse(time.RFC3339Nano, stamp); err == nil {
			out = append(out, t)
		}
	}
	return out
}
