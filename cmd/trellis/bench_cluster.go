package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/events"
)

// clusterBenchStore connects to the NATS cluster of --nats-url for a
// benchmark: it refuses a cluster that holds any Trellis stream (the
// benchmark creates its streams with --bench-replicas and deletes them at
// the end, which must never touch a deployment's log), and returns a
// store whose cleanup deletes the streams it created and no other (see
// benchStreams).
func (a *app) clusterBenchStore(ctx context.Context, batchMin int) (*events.Store, func(), error) {
	if a.benchReplicas < 1 || a.benchReplicas > 5 {
		return nil, nil, trellis.FieldError("bench-replicas", "must be 1 to 5 (JetStream's limit), got %d", a.benchReplicas)
	}
	nc, err := nats.Connect(a.natsURL, a.natsOptions()...)
	if err != nil {
		return nil, nil, trellis.Errorf(trellis.CodeUnavailable, "connect to NATS %s: %w", a.natsURL, err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, nil, trellis.Errorf(trellis.CodeInternal, "jetstream: %w", err)
	}
	lctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var held []string
	for _, name := range events.StreamNames() {
		_, err := js.Stream(lctx, name)
		switch {
		case err == nil:
			held = append(held, name)
		case !errors.Is(err, jetstream.ErrStreamNotFound):
			nc.Close()
			return nil, nil, trellis.Errorf(trellis.CodeUnavailable, "look up stream %s on %s: %w", name, a.natsURL, err)
		}
	}
	if len(held) > 0 {
		nc.Close()
		return nil, nil, trellis.Errorf(trellis.CodeConflict, "the cluster at %s holds Trellis streams (%s): a benchmark creates and deletes "+
			"them, so it needs a cluster of its own (make bench-cluster starts one)", a.natsURL, strings.Join(held, ", "))
	}
	created, err := createBenchStreams(lctx, js, a.benchReplicas, events.NewID(time.Now()))
	if err != nil {
		nc.Close()
		return nil, nil, err
	}
	store, err := events.NewStore(nc, events.StoreConfig{BatchMin: batchMin, Replicas: a.benchReplicas})
	if err == nil {
		err = store.Ensure(ctx)
	}
	cleanup := func() {
		dctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		created.delete(dctx)
		if store != nil {
			_ = store.Close()
		}
		nc.Close()
	}
	if err != nil {
		cleanup()
		return nil, nil, fmt.Errorf("bench on %s: %w", a.natsURL, err)
	}
	return store, cleanup, nil
}
