package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/trellis/trellis/events"
	"github.com/trellis/trellis/events/eventstest"
)

// TestVineClaimRaceAcrossServers: two `trellis serve` processes on one
// NATS server (each with its own kept texts, frontier indexes and file
// writer) and three CLI agents on each race, twice, for the one task of a
// graph that is ready to start. Exactly one agent gets it each time; the
// log holds one claim per graph and no hand edit, and once the servers
// have stopped (finishing their writes) each file holds the log's state.
func TestVineClaimRaceAcrossServers(t *testing.T) {
	t.Parallel()
	b := eventstest.Start(t)
	url := b.Server.ClientURL()
	ws := t.TempDir()
	var datas []string
	var stops []func()
	for i := 0; i < 2; i++ {
		data := t.TempDir()
		_, _, cmd := serveProc(t, data, "--nats-url", url, "--workspace", ws)
		datas = append(datas, data)
		stops = append(stops, func() {
			// Stop it and wait until it is gone (serveProc reaps it).
			_ = cmd.Process.Signal(syscall.SIGTERM)
			deadline := time.Now().Add(60 * time.Second)
			for cmd.Process.Signal(syscall.Signal(0)) == nil {
				if time.Now().After(deadline) {
					t.Fatalf("serve %d did not stop", cmd.Process.Pid)
				}
				time.Sleep(20 * time.Millisecond)
			}
		})
	}
	const plan = "vine 1.2.0\n---\n[root] Ship (notstarted)\n-> b\n---\n[b] Build (notstarted)\n-> a\n---\n[a] Analyse (notstarted)\n"
	ctx := context.Background()
	for round := 0; round < 2; round++ {
		name := fmt.Sprintf("race%d.vine", round)
		f := filepath.Join(ws, name)
		if err := os.WriteFile(f, []byte(plan), 0o644); err != nil {
			t.Fatal(err)
		}
		for _, d := range datas { // both servers read it first: their caches are warm
			if code, _, errs := cli(t, "--data", d, "vine", "next", f); code != 0 {
				t.Fatalf("vine next: exit %d %s", code, errs)
			}
		}
		var wg sync.WaitGroup
		var mu sync.Mutex
		var winners []string
		for i := 0; i < 6; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				agent := fmt.Sprintf("agent-%d", i)
				code, out, errs := cli(t, "--data", datas[i%2], "vine", "claim", f, "--agent", agent)
				switch {
				case code == 0 && strings.Contains(out, "claimed a"):
					mu.Lock()
					winners = append(winners, agent)
					mu.Unlock()
				case code == 0 || code == 4: // nothing ready, or lost the race
				default:
					t.Errorf("%s: exit %d %s%s", agent, code, out, errs)
				}
			}()
		}
		wg.Wait()
		if len(winners) != 1 {
			t.Fatalf("round %d: winners %v; want exactly one", round, winners)
		}
		recs, _, err := b.Store.Load(ctx, events.StreamVine, events.GraphFilter(events.GraphID(name)))
		if err != nil {
			t.Fatal(err)
		}
		var types []string
		for _, r := range recs {
			types = append(types, r.Type)
		}
		if !slices.Equal(types, []string{"imported", "batch_applied"}) {
			t.Fatalf("round %d: events %v", round, types)
		}
	}
	for _, stop := range stops {
		stop()
	}
	// A stopped server has finished its writes.
	for round := 0; round < 2; round++ {
		f := filepath.Join(ws, fmt.Sprintf("race%d.vine", round))
		if got, _ := os.ReadFile(f); !strings.Contains(string(got), "[a] Analyse (started)") {
			t.Fatalf("%s after the servers stopped:\n%s", f, got)
		}
	}
}
