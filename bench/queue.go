package bench

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/events"
	"github.com/trellis/trellis/taskqueue"
	"github.com/trellis/trellis/workers"
)

// QueueConfig sizes the queue benchmark.
type QueueConfig struct {
	// Tasks per measured phase (default 2000).
	Tasks int
	// Workers running concurrently (default 8).
	Workers int
	// OfferedRate is the add rate of the latency phase in tasks/s (default
	// 1000); 0 with LatencySeconds 0 skips the phase.
	OfferedRate int
	// LatencySeconds is the length of the latency phase (default 3).
	LatencySeconds float64
}

func (c QueueConfig) withDefaults() QueueConfig {
	if c.Tasks <= 0 {
		c.Tasks = 2000
	}
	if c.Workers <= 0 {
		c.Workers = 8
	}
	if c.OfferedRate <= 0 {
		c.OfferedRate = 1000
	}
	if c.LatencySeconds <= 0 {
		c.LatencySeconds = 3
	}
	return c
}

// QueueReport is the result of RunQueue.
type QueueReport struct {
	Workers            int     `json:"workers"`
	Tasks              int     `json:"tasks"`
	RawAppendPerSec    float64 `json:"raw_checked_append_per_sec"`
	RawWorkQueuePerSec float64 `json:"raw_workqueue_roundtrip_per_sec"`
	LifecyclePerSec    float64 `json:"lifecycle_per_sec"`
	Ratio              float64 `json:"lifecycle_vs_workqueue_ratio"`
	OfferedRate        int     `json:"offered_rate"`
	ClaimP50Ms         float64 `json:"claim_latency_p50_ms"`
	ClaimP99Ms         float64 `json:"claim_latency_p99_ms"`
	WaitP50Ms          float64 `json:"queue_wait_p50_ms"`
	WaitP99Ms          float64 `json:"queue_wait_p99_ms"`
	Claimed            int     `json:"latency_phase_claimed"`
	// PoolStartP50Ms and PoolStartP99Ms are the same offered load worked
	// by a worker pool of Workers slots: from the add (the task's
	// created_at) to its handler starting, as River's probe measures.
	PoolStartP50Ms float64 `json:"pool_start_latency_p50_ms"`
	PoolStartP99Ms float64 `json:"pool_start_latency_p99_ms"`
	PoolStarted    int     `json:"pool_latency_phase_started"`
}

// Print writes the report as a table.
func (r *QueueReport) Print(w io.Writer) {
	fmt.Fprintf(w, "queue benchmark: %d tasks, %d workers, same server, file storage\n", r.Tasks, r.Workers)
	fmt.Fprintf(w, "  raw JetStream checked append        %10.0f /s\n", r.RawAppendPerSec)
	fmt.Fprintf(w, "  raw JetStream work-queue round trip %10.0f /s   (publish -> fetch 1 -> ack)\n", r.RawWorkQueuePerSec)
	fmt.Fprintf(w, "  Trellis task lifecycle              %10.0f /s   (add -> next -> done)\n", r.LifecyclePerSec)
	fmt.Fprintf(w, "  ratio lifecycle / raw work-queue    %10.2f     (goal >= 0.40)\n", r.Ratio)
	if r.Claimed > 0 {
		fmt.Fprintf(w, "  claim latency at %d tasks/s offered (add acknowledged -> claim recorded): p50 %.2f ms, p99 %.2f ms (goal p99 < 5 ms); %d claims\n",
			r.OfferedRate, r.WaitP50Ms, r.WaitP99Ms, r.Claimed)
		fmt.Fprintf(w, "  queue next call duration (includes waiting for the next task to arrive): p50 %.2f ms, p99 %.2f ms\n", r.ClaimP50Ms, r.ClaimP99Ms)
	}
	if r.PoolStarted > 0 {
		fmt.Fprintf(w, "  pool of %d at %d tasks/s offered (add -> handler started): p50 %.2f ms, p99 %.2f ms (goal p99 < 5 ms); %d tasks\n",
			r.Workers, r.OfferedRate, r.PoolStartP50Ms, r.PoolStartP99Ms, r.PoolStarted)
	}
}

// RunQueue runs every phase against store's server. It creates its own
// scratch streams (BENCH_*) and queue names, and deletes the scratch
// streams afterwards.
func RunQueue(ctx context.Context, store *events.Store, cfg QueueConfig) (*QueueReport, error) {
	cfg = cfg.withDefaults()
	rep := &QueueReport{Workers: cfg.Workers, Tasks: cfg.Tasks, OfferedRate: cfg.OfferedRate}
	var err error
	if rep.RawAppendPerSec, err = rawCheckedAppend(ctx, store, cfg); err != nil {
		return nil, fmt.Errorf("raw append: %w", err)
	}
	if rep.RawWorkQueuePerSec, err = rawWorkQueue(ctx, store, cfg); err != nil {
		return nil, fmt.Errorf("raw work queue: %w", err)
	}
	if rep.LifecyclePerSec, err = lifecycle(ctx, store, cfg); err != nil {
		return nil, fmt.Errorf("lifecycle: %w", err)
	}
	if rep.RawWorkQueuePerSec > 0 {
		rep.Ratio = rep.LifecyclePerSec / rep.RawWorkQueuePerSec
	}
	if err := claimLatency(ctx, store, cfg, rep); err != nil {
		return nil, fmt.Errorf("claim latency: %w", err)
	}
	if err := poolLatency(ctx, store, cfg, rep); err != nil {
		return nil, fmt.Errorf("pool latency: %w", err)
	}
	return rep, nil
}

// poolLatency offers tasks one add at a time at cfg.OfferedRate to a
// worker pool of cfg.Workers no-op slots and measures, per task, the time
// from its add (created_at) to its handler starting.
func poolLatency(ctx context.Context, store *events.Store, cfg QueueConfig, rep *QueueReport) error {
	queue := "plat-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	q := taskqueue.New(store, taskqueue.Config{})
	if _, err := q.EnsureConsumer(ctx, queue, 0); err != nil {
		return err
	}
	total := int(float64(cfg.OfferedRate) * cfg.LatencySeconds)
	var mu sync.Mutex
	var starts []time.Duration
	done := make(chan struct{})
	h := workers.HandlerFunc(func(_ context.Context, t *trellis.Task, _ *workers.Progress) (*trellis.Checkpoint, error) {
		d := time.Since(t.CreatedAt)
		mu.Lock()
		starts = append(starts, d)
		if len(starts) == total {
			close(done)
		}
		mu.Unlock()
		return &trellis.Checkpoint{WhatWasDone: "lat"}, nil
	})
	pool, err := workers.New(q, h, workers.Config{Queue: queue, Worker: "plat", Concurrency: cfg.Workers,
		Logger: slog.New(slog.DiscardHandler), FetchWait: 200 * time.Millisecond})
	if err != nil {
		return err
	}
	pctx, stop := context.WithCancel(ctx)
	stopped := make(chan struct{})
	go func() { _ = pool.Run(pctx); close(stopped) }()
	defer func() { stop(); <-stopped }()
	interval := time.Second / time.Duration(cfg.OfferedRate)
	start := time.Now()
	for i := 0; i < total; i++ {
		if d := time.Until(start.Add(time.Duration(i) * interval)); d > 0 {
			time.Sleep(d)
		}
		if _, err := q.Add(ctx, trellis.AddTaskRequest{Queue: queue, Objective: "latency task"}); err != nil {
			return err
		}
	}
	select {
	case <-done:
	case <-time.After(time.Minute):
		mu.Lock()
		started := len(starts)
		mu.Unlock()
		return fmt.Errorf("only %d of %d tasks started within a minute", started, total)
	case <-ctx.Done():
		return ctx.Err()
	}
	mu.Lock()
	defer mu.Unlock()
	rep.PoolStarted = len(starts)
	rep.PoolStartP50Ms, rep.PoolStartP99Ms = percentileMs(starts, 0.50), percentileMs(starts, 0.99)
	return nil
}

// parallel runs fn(worker, i) for i in [0,n) spread over workers and
// returns operations per second.
func parallel(workers, n int, fn func(w, i int) error) (float64, error) {
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	start := time.Now()
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				if err := fn(w, i); err != nil {
					errs <- err
					return
				}
			}
		}(w)
	}
	wg.Wait()
	el := time.Since(start)
	close(errs)
	if err := <-errs; err != nil {
		return 0, err
	}
	return float64(n) / el.Seconds(), nil
}

// scratchStream creates a raw stream for a comparison, with the replicas
// of the Trellis streams measured beside it, and returns its removal.
func scratchStream(ctx context.Context, js jetstream.JetStream, name string, policy jetstream.RetentionPolicy, replicas int) (func(), error) {
	_ = js.DeleteStream(ctx, name)
	_, err := js.CreateStream(ctx, jetstream.StreamConfig{
		Name: name, Subjects: []string{"bench." + name + ".>"}, Storage: jetstream.FileStorage,
		Retention: policy, Duplicates: 2 * time.Minute, AllowDirect: true, Replicas: max(replicas, 1),
	})
	if err != nil {
		return nil, err
	}
	return func() { _ = js.DeleteStream(context.Background(), name) }, nil
}

// rawCheckedAppend: each op is one publish with a message id and an
// expected-last-subject-sequence check on a wildcard filter, like a
// Trellis append.
func rawCheckedAppend(ctx context.Context, store *events.Store, cfg QueueConfig) (float64, error) {
	js := store.JetStream()
	drop, err := scratchStream(ctx, js, "BENCH_APPEND", jetstream.LimitsPolicy, store.Config().Replicas)
	if err != nil {
		return 0, err
	}
	defer drop()
	body := make([]byte, 300)
	return parallel(cfg.Workers, cfg.Tasks, func(_, i int) error {
		id := strconv.Itoa(i)
		_, err := js.PublishMsg(ctx, &nats.Msg{Subject: "bench.BENCH_APPEND." + id + ".added", Data: body},
			jetstream.WithMsgID("a"+id), jetstream.WithExpectLastSequenceForSubject(0, "bench.BENCH_APPEND."+id+".>"))
		return err
	})
}

// rawWorkQueue: each op is publish → fetch 1 → ack on a work-queue stream
// through one durable pull consumer.
func rawWorkQueue(ctx context.Context, store *events.Store, cfg QueueConfig) (float64, error) {
	js := store.JetStream()
	drop, err := scratchStream(ctx, js, "BENCH_WQ", jetstream.WorkQueuePolicy, store.Config().Replicas)
	if err != nil {
		return 0, err
	}
	defer drop()
	cons, err := js.CreateOrUpdateConsumer(ctx, "BENCH_WQ", jetstream.ConsumerConfig{
		Durable: "wq", AckPolicy: jetstream.AckExplicitPolicy, AckWait: 30 * time.Second, MaxAckPending: 100000, MaxWaiting: 4096,
	})
	if err != nil {
		return 0, err
	}
	body := make([]byte, 300)
	return parallel(cfg.Workers, cfg.Tasks, func(_, i int) error {
		if _, err := js.Publish(ctx, "bench.BENCH_WQ.q", body, jetstream.WithMsgID("w"+strconv.Itoa(i))); err != nil {
			return err
		}
		for {
			batch, err := cons.Fetch(1, jetstream.FetchMaxWait(time.Second))
			if err != nil {
				return err
			}
			for msg := range batch.Messages() {
				return msg.Ack()
			}
		}
	})
}

// lifecycle: each op is add → next → done through the queue handler, one
// handler per worker as separate processes would have.
func lifecycle(ctx context.Context, store *events.Store, cfg QueueConfig) (float64, error) {
	queue := "bench-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	qs := make([]*taskqueue.Handler, cfg.Workers)
	for i := range qs {
		qs[i] = taskqueue.New(store, taskqueue.Config{})
	}
	// Create the consumer before timing.
	if _, err := qs[0].Consumer(ctx, queue); err != nil {
		return 0, err
	}
	return parallel(cfg.Workers, cfg.Tasks, func(w, i int) error {
		q := qs[w]
		worker := "bench-" + strconv.Itoa(w)
		if _, err := q.Add(ctx, trellis.AddTaskRequest{Queue: queue, Objective: "bench task " + strconv.Itoa(i)}); err != nil {
			return err
		}
		for {
			t, err := q.Next(ctx, trellis.NextRequest{Queue: queue, Worker: worker})
			if err != nil {
				return err
			}
			if t == nil {
				continue // another worker took ours; ours is coming
			}
			_, err = q.Done(ctx, trellis.DoneRequest{TaskID: t.TaskID, Worker: worker, WhatWasDone: "bench"})
			return err
		}
	})
}

// claimLatency offers tasks at cfg.OfferedRate while workers poll; it
// measures the duration of each successful claim (queue next) and the wait
// from add to claim.
func claimLatency(ctx context.Context, store *events.Store, cfg QueueConfig, rep *QueueReport) error {
	queue := "lat-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	producer := taskqueue.New(store, taskqueue.Config{})
	if _, err := producer.Consumer(ctx, queue); err != nil {
		return err
	}
	total := int(float64(cfg.OfferedRate) * cfg.LatencySeconds)
	var mu sync.Mutex
	var claims, waits []time.Duration
	var claimed atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, cfg.Workers+1)
	deadline := time.Now().Add(time.Duration(cfg.LatencySeconds*float64(time.Second)) + 10*time.Second)
	for w := 0; w < cfg.Workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			q := taskqueue.New(store, taskqueue.Config{})
			worker := "lat-" + strconv.Itoa(w)
			for claimed.Load() < int64(total) && time.Now().Before(deadline) {
				start := time.Now()
				t, err := q.Next(ctx, trellis.NextRequest{Queue: queue, Worker: worker})
				if err != nil {
					errs <- err
					return
				}
				if t == nil {
					time.Sleep(200 * time.Microsecond)
					continue
				}
				end := time.Now()
				claimed.Add(1)
				mu.Lock()
				claims = append(claims, end.Sub(start))
				waits = append(waits, end.Sub(t.CreatedAt))
				mu.Unlock()
				if _, err := q.Done(ctx, trellis.DoneRequest{TaskID: t.TaskID, Worker: worker, WhatWasDone: "lat"}); err != nil {
					errs <- err
					return
				}
			}
		}(w)
	}
	interval := time.Second / time.Duration(cfg.OfferedRate)
	start := time.Now()
	for i := 0; i < total; i++ {
		if d := time.Until(start.Add(time.Duration(i) * interval)); d > 0 {
			time.Sleep(d)
		}
		if _, err := producer.Add(ctx, trellis.AddTaskRequest{Queue: queue, Objective: "latency task"}); err != nil {
			errs <- err
			break
		}
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return err
	}
	rep.Claimed = len(claims)
	rep.ClaimP50Ms, rep.ClaimP99Ms = percentileMs(claims, 0.50), percentileMs(claims, 0.99)
	rep.WaitP50Ms, rep.WaitP99Ms = percentileMs(waits, 0.50), percentileMs(waits, 0.99)
	return nil
}

func percentileMs(ds []time.Duration, p float64) float64 {
	if len(ds) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	idx := int(p*float64(len(s))+0.5) - 1
	if idx < 0 {
		idx = 0
	}
	if idx >= len(s) {
		idx = len(s) - 1
	}
	return float64(s[idx]) / float64(time.Millisecond)
}
