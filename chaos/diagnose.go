package chaos

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// diagnose keeps what explains a run whose log could not be read: each
// node's JetStream state (/jsz with streams, consumers and raft groups)
// and goroutines (/stacksz) from its monitoring port, and each serve's
// goroutines (SIGQUIT makes a Go program print them to its log, then
// exit). It is called at the end of such a run, when nothing else needs
// the serves.
func (c *Cluster) diagnose(ctx context.Context) []string {
	var kept []string
	client := &http.Client{Timeout: 10 * time.Second}
	for i, n := range c.Nodes {
		dir := filepath.Dir(n.log)
		for name, path := range map[string]string{"jsz.json": "/jsz?streams=true&consumers=true&raft=true&config=true", "stacks.txt": "/stacksz"} {
			out := filepath.Join(dir, name)
			if err := fetchTo(ctx, client, fmt.Sprintf("http://%s:8222%s", c.Net.Addr(i+1), path), out); err == nil {
				kept = append(kept, out)
			}
		}
	}
	for _, p := range c.Serves {
		if p.Running() && p.Signal(syscall.SIGQUIT) == nil {
			p.mu.Lock()
			done := p.done
			p.mu.Unlock()
			select {
			case <-done:
			case <-time.After(10 * time.Second):
			}
			kept = append(kept, p.log)
		}
	}
	return kept
}

func fetchTo(ctx context.Context, client *http.Client, url, path string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = io.Copy(f, resp.Body)
	return err
}
