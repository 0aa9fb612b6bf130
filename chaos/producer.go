package chaos

import (
	"context"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/client"
)

// Producer adds tasks through the Trellis NATS API and records every
// acknowledged add (one task id per line) in a file of its own. An add
// whose answer is lost is retried with the same idempotency key until it
// is acknowledged or the producer stops; only acknowledged adds count.
type Producer struct {
	name  string
	urls  string
	acked string
	pace  time.Duration
	mu    sync.Mutex
	n     int
	errs  int
}

// Run adds until ctx ends.
func (p *Producer) Run(ctx context.Context) error {
	nc, err := nats.Connect(p.urls, nats.MaxReconnects(-1), nats.ReconnectWait(100*time.Millisecond), nats.RetryOnFailedConnect(true))
	if err != nil {
		return fmt.Errorf("producer %s: %w", p.name, err)
	}
	defer nc.Close()
	api := client.NewAPI(nc, 10*time.Second)
	f, err := os.OpenFile(p.acked, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	for i := 0; ctx.Err() == nil; i++ {
		req := trellis.AddTaskRequest{Queue: Queue, Objective: fmt.Sprintf("%s task %d", p.name, i),
			IdempotencyKey: fmt.Sprintf("%s-%d", p.name, i), MaxAttempts: 50}
		for ctx.Err() == nil {
			actx, cancel := context.WithTimeout(ctx, 10*time.Second)
			task, err := api.Add(actx, req)
			cancel()
			if err == nil {
				if _, err := fmt.Fprintln(f, task.TaskID); err != nil {
					return err
				}
				p.mu.Lock()
				p.n++
				p.mu.Unlock()
				break
			}
			p.mu.Lock()
			p.errs++
			p.mu.Unlock()
			select {
			case <-ctx.Done():
			case <-time.After(100 * time.Millisecond):
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(p.pace):
		}
	}
	return nil
}

// Counts returns the acknowledged adds and the failed attempts so far.
func (p *Producer) Counts() (acked, errs int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.n, p.errs
}
