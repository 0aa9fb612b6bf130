package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// tourBlocks returns the shell blocks of the README's tour: each ```sh
// block that follows a `<!-- tour -->` line, in order.
func tourBlocks(t *testing.T) []string {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var blocks []string
	var cur []string
	marked, in := false, false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case in && line == "```":
			blocks = append(blocks, strings.Join(cur, "\n"))
			cur, in, marked = nil, false, false
		case in:
			cur = append(cur, line)
		case strings.TrimSpace(line) == "<!-- tour -->":
			marked = true
		case marked && line == "```sh":
			in = true
		case marked && strings.TrimSpace(line) != "":
			t.Fatalf("README: a <!-- tour --> marker is followed by %q, not a ```sh block", line)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return blocks
}

// TestReadmeTour runs the README's ten-minute tour as a newcomer would:
// `trellis serve` (make run) in a fresh directory with trellis in ./bin,
// then every tour block pasted into a shell, in order. Each must succeed,
// and what the tour says happens must have happened: the review task is
// done with its checkpoint, the two agents claimed different VINE tasks,
// and audit verify finds the log intact.
func TestReadmeTour(t *testing.T) {
	t.Parallel()
	blocks := tourBlocks(t)
	if len(blocks) < 4 {
		t.Fatalf("the README's tour has %d blocks marked <!-- tour -->; want the queue, the agent, the graph and the audit", len(blocks))
	}
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(trellisBinary(t), filepath.Join(dir, "bin", "trellis")); err != nil {
		t.Fatal(err)
	}
	serve := exec.Command(filepath.Join(dir, "bin", "trellis"), "serve", "--data", "./data", "--nats-addr", "127.0.0.1:0", "--http-addr", "127.0.0.1:0")
	serve.Dir = dir
	serveOut := &lockedWriter{w: &bytes.Buffer{}}
	serve.Stdout, serve.Stderr = serveOut, serveOut
	if err := serve.Start(); err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- serve.Wait() }()
	t.Cleanup(func() {
		_ = serve.Process.Signal(syscall.SIGTERM)
		select {
		case <-served:
		case <-time.After(30 * time.Second):
			_ = serve.Process.Kill()
			<-served
		}
	})
	deadline := time.Now().Add(90 * time.Second)
	for !strings.Contains(serveOut.String(), "recorded in") {
		select {
		case err := <-served:
			t.Fatalf("serve exited (%v):\n%s", err, serveOut.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve did not start:\n%s", serveOut.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	// One shell, as one terminal: what a block exports, the next sees.
	var script strings.Builder
	script.WriteString("set -euo pipefail\n")
	for i, block := range blocks {
		fmt.Fprintf(&script, "echo '--- tour block %d'\n%s\n", i+1, block)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	sh := exec.CommandContext(ctx, "bash", "-c", script.String())
	sh.Dir = dir
	sh.Env = append(os.Environ(), "TRELLIS_DATA=", "TRELLIS_NATS_URL=", "TRELLIS_TOKEN=")
	var out bytes.Buffer
	sh.Stdout, sh.Stderr = &out, &out
	if err := sh.Run(); err != nil {
		t.Fatalf("the tour failed (%v); its output, block by block:\n%s\nserve:\n%s", err, out.String(), serveOut.String())
	}
	t.Logf("the tour's output:\n%s", out.String())
	verify := out.String()[strings.LastIndex(out.String(), "--- tour block"):]
	if !strings.Contains(verify, "OK") {
		t.Errorf("the tour's last block (the audit) did not end with verify OK:\n%s", verify)
	}

	// What the tour says happened.
	code, listOut, errOut := runIn(t, dir, "queue", "list", "--queue", "review", "--json")
	if code != 0 {
		t.Fatalf("queue list: exit %d: %s", code, errOut)
	}
	var list struct {
		Tasks []struct {
			Status     string `json:"status"`
			Checkpoint *struct {
				WhatWasDone string `json:"what_was_done"`
			} `json:"checkpoint"`
		} `json:"tasks"`
	}
	if err := json.Unmarshal([]byte(listOut), &list); err != nil {
		t.Fatalf("queue list --json: %v\n%s", err, listOut)
	}
	if len(list.Tasks) != 1 || list.Tasks[0].Status != "done" {
		t.Errorf("the review task: %s; want one task, done", listOut)
	}
	code, graph, errOut := runIn(t, dir, "vine", "read", "release.vine", "list", "--status", "started", "--json")
	if code != 0 {
		t.Fatalf("vine read: exit %d: %s", code, errOut)
	}
	if !strings.Contains(graph, `"build"`) || !strings.Contains(graph, `"docs"`) {
		t.Errorf("after two agents claimed, build and docs should both be started (one each):\n%s", graph)
	}
}

// String returns what was written so far.
func (l *lockedWriter) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.String()
}
