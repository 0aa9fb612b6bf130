package chaos

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/trellis/trellis/events"
)

// Scenario is one run: a cluster, producers and workers, and faults
// injected one after the other (each repaired before the next).
type Scenario struct {
	Faults   []Fault
	Number   uint64        // makes the run reproducible: which node, file and bits the fault picks
	Heal     time.Duration // how long the fault lasts before its repair
	Duration time.Duration // how long producers add after the last fault starts (at least Heal)
	Lease    time.Duration // the queue's lease
	Dir      string        // the run's files: node stores, logs, ledger, acknowledged adds
	Binaries Binaries
	Octet    int // picks the run's subnet 10.200.Octet+1.0/24; negative: a free one at random
	Nodes    int // nats-server nodes: 3 (default) or 5
	Replicas int // the streams' replicas: 3 (default), up to Nodes
	Log      io.Writer
}

// Result is one run's outcome.
type Result struct {
	Fault  string          // the faults' names joined by "+"
	What   []string        // what each fault did
	Resume []time.Duration // per fault: how long completions stopped (see resumeAfter; -1: none)
	// Breakdown is per fault what the stall was made of (elections,
	// then Trellis's own part up to the first completion).
	Breakdown []Breakdown
	Check     Check
	Wall      time.Duration
	Errors    int // failed add attempts (retried with the same key)
}

// Run runs one scenario and checks it. The cluster, its processes and
// its network are removed before Run returns.
func Run(ctx context.Context, sc Scenario) (*Result, error) {
	start := time.Now()
	var names []string
	for _, f := range sc.Faults {
		names = append(names, f.Name)
	}
	name := strings.Join(names, "+")
	if sc.Nodes <= 0 {
		sc.Nodes = 3
	}
	if sc.Replicas <= 0 {
		sc.Replicas = 3
	}
	if sc.Nodes != 3 || sc.Replicas != 3 {
		name += fmt.Sprintf(" (%d nodes, R%d)", sc.Nodes, sc.Replicas)
	}
	logf := func(format string, args ...any) {
		if sc.Log != nil {
			fmt.Fprintf(sc.Log, "%s %s: %s\n", time.Now().UTC().Format("15:04:05.000"), name, fmt.Sprintf(format, args...))
		}
	}
	if sc.Heal <= 0 {
		sc.Heal = 12 * time.Second
	}
	if sc.Duration < sc.Heal {
		sc.Duration = sc.Heal + 5*time.Second
	}
	if sc.Lease <= 0 {
		sc.Lease = 5 * time.Second
	}
	rng := rand.New(rand.NewPCG(sc.Number, 0x7472656c6c6973))
	ccfg := ClusterConfig{Dir: sc.Dir, Suffix: randomSuffix(), Octet: sc.Octet, Nodes: sc.Nodes, Replicas: sc.Replicas, Workers: 2, Lease: sc.Lease, Binaries: sc.Binaries}
	for _, f := range sc.Faults {
		ccfg.PowerFS = ccfg.PowerFS || f.PowerFS
		if f.SyncInterval != "" {
			ccfg.SyncInterval = f.SyncInterval
		}
	}
	c, err := StartCluster(ctx, ccfg)
	if err != nil {
		return nil, err
	}
	defer c.Close(context.WithoutCancel(ctx))
	logf("cluster up in %s (%s)", time.Since(start).Round(time.Millisecond), sc.Dir)
	pctx, stopProducers := context.WithCancel(ctx)
	defer stopProducers()
	var wg sync.WaitGroup
	var producers []*Producer
	for i := 0; i < 2; i++ {
		p := &Producer{name: fmt.Sprintf("p%d", i+1), urls: c.URLs(), acked: filepath.Join(sc.Dir, fmt.Sprintf("acked-p%d", i+1)), pace: 40 * time.Millisecond}
		producers = append(producers, p)
		wg.Add(1)
		go func() { defer wg.Done(); _ = p.Run(pctx) }()
	}
	// Warm up: tasks are being executed before the fault.
	if err := waitFor(ctx, 90*time.Second, func() bool { l, _ := readLines(c.Ledger); return len(l) >= 20 }); err != nil {
		return nil, fmt.Errorf("no executions before the fault: %w", err)
	}
	var faultTimes, repairTimes []time.Time
	var whats []string
	for i, f := range sc.Faults {
		if i > 0 {
			// The cluster takes up work again before the next fault.
			n := 0
			if l, _ := readLines(c.Ledger); l != nil {
				n = len(l)
			}
			if err := waitFor(ctx, 90*time.Second, func() bool { l, _ := readLines(c.Ledger); return len(l) >= n+10 }); err != nil {
				return nil, fmt.Errorf("no executions after repairing %s: %w", sc.Faults[i-1].Name, err)
			}
		}
		if l, f, err := c.StreamLeader(ctx); err != nil {
			return nil, fmt.Errorf("before %s: %w", sc.Faults[i].Name, err)
		} else {
			logf("queue stream leader n%d, followers %v", l, f)
		}
		faultAt := time.Now()
		what, repair, err := f.Inject(ctx, c, rng)
		if errors.Is(err, ErrUnsupported) && len(sc.Faults) > 1 {
			// One of several: the others still run.
			logf("%s skipped: %v", f.Name, err)
			what, repair = "skipped: "+err.Error(), func(context.Context) error { return nil }
		} else if err != nil {
			return nil, fmt.Errorf("inject %s: %w", f.Name, err)
		}
		logf("%s: %s", f.Name, what)
		faultTimes, whats = append(faultTimes, faultAt), append(whats, what)
		settle(ctx, sc.Heal)
		if err := repair(ctx); err != nil {
			return nil, fmt.Errorf("repair %s: %w", f.Name, err)
		}
		repairTimes = append(repairTimes, time.Now())
		logf("%s repaired after %s", f.Name, time.Since(faultAt).Round(time.Millisecond))
	}
	settle(ctx, sc.Duration-sc.Heal)
	stopProducers()
	wg.Wait()
	errs := 0
	for _, p := range producers {
		_, e := p.Counts()
		errs += e
	}
	acked, err := ackedAdds(sc.Dir)
	if err != nil {
		return nil, err
	}
	logf("producers stopped: %d acknowledged adds, %d failed attempts retried", len(acked), errs)
	// Every acknowledged add should complete: wait for it, bounded by
	// lease + heal + a generous margin for a loaded machine.
	var evs []logEvent
	limit := sc.Lease + sc.Heal + 90*time.Second
	var lastErr error
	_ = waitFor(ctx, limit, func() bool {
		got, err := readLog(ctx, c.bins.Trellis, c.URLs(), filepath.Join(sc.Dir, "cli"))
		if lastErr = err; err != nil {
			return false // keep the last log read whole
		}
		evs = got
		ch := check(evs, acked, nil)
		return ch.Lost+ch.Stuck == 0
	})
	if evs == nil && lastErr != nil {
		// The log cannot be read at all (a stream gone): every
		// acknowledged add counts as lost, and verify still runs.
		logf("the log cannot be read: %v", lastErr)
	}
	unanswered, err := pingAPI(ctx, c.URLs())
	if err != nil {
		return nil, err
	}
	if unanswered > 0 {
		logf("%d of %d API pings unanswered", unanswered, apiPings)
	}
	ledger, err := readLines(c.Ledger)
	if err != nil {
		return nil, err
	}
	ch := check(evs, acked, ledger)
	ch.Unanswered = unanswered
	if unanswered > 0 {
		ch.Examples = append([]string{fmt.Sprintf("%d of %d API pings unanswered", unanswered, apiPings)}, ch.Examples...)
	}
	var resumes []time.Duration
	var breakdowns []Breakdown
	for i, at := range faultTimes {
		var end time.Time
		if i+1 < len(faultTimes) {
			end = faultTimes[i+1]
		}
		resumes = append(resumes, resumeAfter(evs, at, end))
		b := breakdown(c.Elections(), evs, events.StreamQueue, at, repairTimes[i], end)
		breakdowns = append(breakdowns, b)
		logf("%s: resume %s: %s; leader changes during the fault: %s", sc.Faults[i].Name, fmtResume(resumes[i]), b, strings.Join(b.Changes, ", "))
		logf("%s: clients: %s", sc.Faults[i].Name, strings.Join(c.clientStalls(at, end), "; "))
	}
	ch.Verify = verifyLog(ctx, c.bins.Trellis, c.URLs(), filepath.Join(sc.Dir, "cli"))
	if evs == nil && lastErr != nil {
		logf("kept for diagnosis: %s", strings.Join(c.diagnose(ctx), ", "))
		ch.Unreadable = true
		ch.Examples = append([]string{"log unreadable: " + lastErr.Error()}, ch.Examples...)
	}
	res := &Result{Fault: name, What: whats, Resume: resumes, Breakdown: breakdowns, Check: ch, Wall: time.Since(start), Errors: errs}
	var rs []string
	for _, d := range resumes {
		rs = append(rs, fmtResume(d))
	}
	logf("acked %d lost %d completed-twice %d executed-twice %d stuck %d resume %s verify %s api-unanswered %d %v",
		ch.Acked, ch.Lost, ch.CompletedTwice, ch.ExecutedTwice, ch.Stuck, strings.Join(rs, ", "), ch.Verify, ch.Unanswered, ch.Examples)
	return res, nil
}

// waitFor polls cond every 500 ms until it holds or limit passes.
func waitFor(ctx context.Context, limit time.Duration, cond func() bool) error {
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			return fmt.Errorf("not reached within %s", limit)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
	return nil
}

func fmtResume(d time.Duration) string {
	if d < 0 {
		return "none"
	}
	return fmt.Sprintf("%.1f s", d.Seconds())
}

// Row is one line of the table: the runs of one fault summed up.
type Row struct {
	Fault                                  string
	Runs, Acked, Lost, Twice, Exec2, Stuck int
	Unreadable                             int // runs whose log could not be read (their adds count as lost)
	Unanswered                             int // API pings unanswered after the repair, over the runs
	Resume                                 []time.Duration
	Verify                                 []string
}

// Table sums results per fault, in the order faults first appear.
func Table(results []*Result) []Row {
	var rows []Row
	idx := map[string]int{}
	for _, r := range results {
		i, ok := idx[r.Fault]
		if !ok {
			i = len(rows)
			idx[r.Fault] = i
			rows = append(rows, Row{Fault: r.Fault})
		}
		row := &rows[i]
		row.Runs++
		row.Acked += r.Check.Acked
		row.Lost += r.Check.Lost
		row.Twice += r.Check.CompletedTwice
		row.Exec2 += r.Check.ExecutedTwice
		row.Stuck += r.Check.Stuck
		if r.Check.Unreadable {
			row.Unreadable++
		}
		row.Unanswered += r.Check.Unanswered
		row.Resume = append(row.Resume, r.Resume...)
		row.Verify = append(row.Verify, r.Check.Verify)
	}
	return rows
}

// PrintTable writes the table in Markdown.
func PrintTable(w io.Writer, rows []Row) {
	fmt.Fprintln(w, "| fault | runs | acked adds | lost | completed twice | executed twice | stuck | resume time | verify |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|")
	for _, r := range rows {
		var res []string
		for _, d := range r.Resume {
			res = append(res, fmtResume(d))
		}
		verify := "ok"
		for _, v := range r.Verify {
			if v != "ok" {
				verify = strings.Join(r.Verify, "; ")
				break
			}
		}
		if r.Unanswered > 0 {
			verify += fmt.Sprintf(" (%d API pings unanswered)", r.Unanswered)
		}
		lost := fmt.Sprint(r.Lost)
		if r.Unreadable > 0 {
			lost += fmt.Sprintf(" (log unreadable in %d run(s))", r.Unreadable)
		}
		fmt.Fprintf(w, "| %s | %d | %d | %s | %d | %d | %d | %s | %s |\n", r.Fault, r.Runs, r.Acked, lost, r.Twice, r.Exec2, r.Stuck, strings.Join(res, ", "), verify)
	}
}

// TempDir makes a run directory under base (os.TempDir() when empty).
func TempDir(base, fault string) (string, error) {
	return os.MkdirTemp(base, "chaos-"+fault+"-")
}
