package events_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/trellis/trellis/events"
	"github.com/trellis/trellis/events/eventstest"
)

func streamReplicas(t *testing.T, js jetstream.JetStream) map[string]int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out := map[string]int{}
	for _, name := range events.StreamNames() {
		st, err := js.Stream(ctx, name)
		if err != nil {
			t.Fatalf("stream %s: %v", name, err)
		}
		out[name] = st.CachedInfo().Config.Replicas
	}
	return out
}

// TestEnsureNeverDowngradesReplicas: on a 3-node cluster whose streams an
// operator made R3, a store that asks for no replicas (every CLI and
// worker store) keeps them at 3, and so does the blob bucket; only an
// explicit request changes them.
func TestEnsureNeverDowngradesReplicas(t *testing.T) {
	t.Parallel()
	c := eventstest.StartCluster(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	nc, err := nats.Connect(c.URLs())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	open := func(replicas int) *events.Store {
		s, err := events.NewStore(nc, events.StoreConfig{Replicas: replicas})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Ensure(ctx); err != nil {
			t.Fatalf("ensure (replicas %d): %v", replicas, err)
		}
		return s
	}
	js, _ := jetstream.New(nc)
	open(3)
	for name, r := range streamReplicas(t, js) {
		if r != 3 {
			t.Fatalf("operator asked for 3: %s has %d", name, r)
		}
	}
	client := open(0)
	for name, r := range streamReplicas(t, js) {
		if r != 3 {
			t.Fatalf("a client store changed %s to %d replicas", name, r)
		}
	}
	// The client's loads and appends work on the replicated streams.
	e := env(t, "added", events.NewID(time.Now()))
	subject := "trellis.queue.default." + e.AggregateID + ".added"
	if _, err := client.Append(ctx, subject, e, events.Expect{Filter: "trellis.queue.*." + e.AggregateID + ".>"}, ""); err != nil {
		t.Fatal(err)
	}
	open(1)
	for name, r := range streamReplicas(t, js) {
		if r != 1 {
			t.Fatalf("operator asked for 1: %s has %d", name, r)
		}
	}
}

// TestEnsureNewStreamsFollowExisting: a store asking for no replicas
// creates a missing stream like the existing queue stream.
func TestEnsureNewStreamsFollowExisting(t *testing.T) {
	t.Parallel()
	c := eventstest.StartCluster(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	nc, err := nats.Connect(c.URLs())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	s, _ := events.NewStore(nc, events.StoreConfig{Replicas: 3})
	if err := s.Ensure(ctx); err != nil {
		t.Fatal(err)
	}
	if err := js.DeleteStream(ctx, events.StreamMemory); err != nil {
		t.Fatal(err)
	}
	client, _ := events.NewStore(nc, events.StoreConfig{})
	if err := client.Ensure(ctx); err != nil {
		t.Fatal(err)
	}
	if r := streamReplicas(t, js)[events.StreamMemory]; r != 3 {
		t.Fatalf("recreated %s with %d replicas; want 3 like the queue stream", events.StreamMemory, r)
	}
}
