package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/trellis/trellis/chaos"
)

func main() {
	os.Exit(run())
}

func run() int {
	var names, dir, binDir string
	var number uint64
	var runs, nodes, replicas int
	var heal, duration, lease time.Duration
	var keep bool
	flag.StringVar(&names, "faults", "all", "comma-separated faults, each run alone; all; mixed (per run, three faults picked by the run number, one after the other); or regressions (the runs that once found a defect, each with its own number, heal and runs): "+faultNames())
	flag.Uint64Var(&number, "number", 1, "the run number: it decides which node, file and bits each fault picks; the same number repeats a run")
	flag.IntVar(&runs, "runs", 1, "runs per fault (run k uses number+k)")
	flag.DurationVar(&heal, "heal", 12*time.Second, "how long each fault lasts before it is repaired (past the election timeout)")
	flag.DurationVar(&duration, "duration", 20*time.Second, "how long producers add after the fault starts")
	flag.IntVar(&nodes, "nodes", 3, "nats-server nodes: 3 or 5")
	flag.IntVar(&replicas, "replicas", 3, "the streams' replicas (3, or 5 on 5 nodes)")
	flag.DurationVar(&lease, "lease", 5*time.Second, "the queue's lease")
	flag.StringVar(&dir, "dir", "", "where runs keep their files (default: the system temp dir)")
	flag.StringVar(&binDir, "bin", "", "use the nats-server and trellis binaries in this directory instead of building them (to compare two builds)")
	flag.BoolVar(&keep, "keep", false, "keep each run's files (logs, stores, ledger) for inspection")
	flag.Parse()
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	if err := chaos.Available(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "chaos:", err)
		return 2
	}
	var faults []chaos.Fault
	mixed := names == "mixed"
	// plan is per fault the number, heal, duration and runs (the flags',
	// or a regression's own).
	type plan struct {
		number         uint64
		heal, duration time.Duration
		runs           int
	}
	var plans []plan
	switch names {
	case "all":
		faults = chaos.Faults()
	case "mixed":
		faults = []chaos.Fault{{Name: "mixed"}}
	case "regressions":
		for _, r := range chaos.Regressions() {
			f, err := chaos.FaultByName(r.Fault)
			if err != nil {
				fmt.Fprintln(os.Stderr, "chaos:", err)
				return 2
			}
			fmt.Fprintf(os.Stderr, "chaos: regression %q: %s, number %d, heal %s, %d run(s) (deterministic test: %s)\n", r.Name, r.Fault, r.Number, r.Heal, r.Runs, r.Test)
			faults = append(faults, f)
			plans = append(plans, plan{r.Number, r.Heal, r.Duration, r.Runs})
		}
	default:
		for _, n := range strings.Split(names, ",") {
			f, err := chaos.FaultByName(strings.TrimSpace(n))
			if err != nil {
				fmt.Fprintln(os.Stderr, "chaos:", err, "(known: "+faultNames()+")")
				return 2
			}
			faults = append(faults, f)
		}
	}
	bins := chaos.Binaries{NATSServer: filepath.Join(binDir, "nats-server"), Trellis: filepath.Join(binDir, "trellis")}
	if binDir == "" {
		buildDir, err := os.MkdirTemp(dir, "chaos-bin-")
		if err != nil {
			fmt.Fprintln(os.Stderr, "chaos:", err)
			return 1
		}
		defer os.RemoveAll(buildDir)
		if bins, err = chaos.Build(ctx, buildDir); err != nil {
			fmt.Fprintln(os.Stderr, "chaos:", err)
			return 1
		}
	}
	var results []*chaos.Result
	failed := false
	for i, f := range faults {
		number, heal, duration, runs := number, heal, duration, runs
		if plans != nil {
			number, heal, duration, runs = plans[i].number, plans[i].heal, plans[i].duration, plans[i].runs
		}
		for k := 0; k < runs; k++ {
			rdir, err := chaos.TempDir(dir, f.Name)
			if err != nil {
				fmt.Fprintln(os.Stderr, "chaos:", err)
				return 1
			}
			list := []chaos.Fault{f}
			if mixed {
				list = chaos.Mixed(number+uint64(k), 3)
			}
			res, err := chaos.Run(ctx, chaos.Scenario{Faults: list, Number: number + uint64(k), Heal: heal, Duration: duration, Lease: lease,
				Dir: rdir, Binaries: bins, Octet: -1, Log: os.Stderr, Nodes: nodes, Replicas: replicas})
			if errors.Is(err, chaos.ErrUnsupported) {
				fmt.Fprintf(os.Stderr, "chaos: %s: skipped: %v\n", f.Name, err)
				os.RemoveAll(rdir)
				continue
			}
			if err != nil {
				fmt.Fprintf(os.Stderr, "chaos: %s (number %d): %v (files in %s)\n", f.Name, number+uint64(k), err, rdir)
				failed = true
				continue
			}
			if res.Check.Failed() {
				failed = true
				fmt.Fprintf(os.Stderr, "chaos: %s (number %d) broke a promise; files kept in %s\n", f.Name, number+uint64(k), rdir)
			} else if !keep {
				os.RemoveAll(rdir)
			}
			results = append(results, res)
		}
		if ctx.Err() != nil {
			break
		}
	}
	chaos.PrintTable(os.Stdout, chaos.Table(results))
	if failed {
		return 1
	}
	return 0
}

func faultNames() string {
	var n []string
	for _, f := range chaos.Faults() {
		n = append(n, f.Name)
	}
	return strings.Join(n, ", ")
}
