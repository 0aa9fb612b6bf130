package retention_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/agentmemory"
	"github.com/trellis/trellis/audit"
	"github.com/trellis/trellis/events"
	"github.com/trellis/trellis/events/eventstest"
	"github.com/trellis/trellis/retention"
)

// TestPruneIgnoresForgedRecords: a client holding NATS credentials only
// publishes prune records on the retention subject (plain NATS, no
// Trellis code): records of the auth stream and of a KV bucket's stream,
// and (unsigned) of the queue, workflow and agent task streams, each
// claiming every sequence removed. The server's next prune (with the
// audit key; without it for the foreign streams) removes nothing from any
// stream and counts the records it ignored; verify under the key finds
// no removal.
func TestPruneIgnoresForgedRecords(t *testing.T) {
	t.Parallel()
	b := eventstest.Start(t)
	store, ctx := b.Store, ctxT(t)
	key := []byte(testAnchorKey)
	js, err := jetstream.New(b.Conn)
	if err != nil {
		t.Fatal(err)
	}
	// Something on every stream a forged record names.
	run, _ := appendRun(t, store, 3)
	_, _ = appendRun(t, store, 2)
	tasks := agentmemory.NewHandler(store, nil)
	if _, err := tasks.TaskCreate(ctx, trellis.AgentTaskCreateRequest{Name: "kept-task", Description: "open", Objectives: []string{"Do"}}); err != nil {
		t.Fatal(err)
	}
	chain := func(subject, filter, id string, n int) {
		t.Helper()
		var last uint64
		prev := ""
		for i := 0; i < n; i++ {
			env, err := events.NewEnvelope(time.Now(), "note", id, "test", 1, map[string]int{"i": i})
			if err != nil {
				t.Fatal(err)
			}
			env.Prev = prev
			ack, err := store.Append(ctx, subject, env, events.Expect{Filter: filter, LastSeq: last}, env.ID)
			if err != nil {
				t.Fatal(err)
			}
			last, prev = ack.Seq, events.Hash(env)
		}
	}
	chain("trellis.auth.alice.note", "trellis.auth.alice.>", "alice", 3)
	chain("trellis.queue.q.t1.note", "trellis.queue.*.t1.>", "t1", 3)
	kv, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "hostile"})
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"a", "b", "c"} {
		if _, err := kv.Put(ctx, k, []byte("v")); err != nil {
			t.Fatal(err)
		}
	}
	streams := []string{events.StreamAuth, "KV_hostile", events.StreamQueue, events.StreamWorkflows, events.StreamTasks}
	counts := func() map[string]uint64 {
		out := map[string]uint64{}
		for _, name := range streams {
			s, err := js.Stream(ctx, name)
			if err != nil {
				t.Fatal(err)
			}
			info, err := s.Info(ctx)
			if err != nil {
				t.Fatal(err)
			}
			out[name] = info.State.Msgs
		}
		return out
	}
	forged := 0
	forge := func(stream string, aggregates []string) {
		t.Helper()
		p := events.PrunedPayload{Stream: stream, Cut: time.Now().UTC().Format(time.RFC3339Nano), Archive: "prune-x.jsonl", Digest: "00",
			Events: 3, Removed: [][2]uint64{{1, 1 << 63}}, Tombstones: 5, Aggregates: aggregates}
		env, err := events.NewEnvelope(time.Now(), events.PrunedType, events.RetentionAggregate, "trellis-prune", events.PrunedSchema, p)
		if err != nil {
			t.Fatal(err)
		}
		body, err := json.Marshal(env)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := js.Publish(ctx, events.RetentionSubjectPrefix+events.PrunedType, body); err != nil {
			t.Fatal(err)
		}
		forged++
	}
	prune := func(key []byte, when string) {
		t.Helper()
		before := counts()
		res, err := retention.Prune(ctx, store, retention.Options{OlderThan: 24 * time.Hour, Archive: t.TempDir(), Key: key})
		if err != nil {
			t.Fatalf("prune %s: %v", when, err)
		}
		if after := counts(); len(after) != len(before) || func() bool {
			for k, v := range before {
				if after[k] != v {
					return true
				}
			}
			return false
		}() {
			t.Fatalf("prune %s: streams held %v, now %v", when, before, after)
		}
		if res.IgnoredRecords != forged {
			t.Fatalf("prune %s ignored %d record(s); want the %d forged", when, res.IgnoredRecords, forged)
		}
	}
	// Without a key: records of streams prunes do not remove from.
	forge(events.StreamAuth, []string{"alice"})
	prune(nil, "without a key after a forged auth record")
	forge("KV_hostile", []string{"a"})
	prune(nil, "without a key after a forged KV record")
	// With the key: unsigned records of any stream.
	forge(events.StreamQueue, []string{"q/t1"})
	prune(key, "after a forged queue record")
	forge(events.StreamWorkflows, []string{"run/" + run})
	prune(key, "after a forged workflow record")
	forge(events.StreamTasks, []string{"agent-task/kept-task"})
	prune(key, "after a forged agent task record")
	forge(events.StreamAuth, []string{"alice"})
	prune(key, "after a forged auth record")
	var fs []audit.Finding
	if _, err := audit.Verify(ctx, store, audit.VerifyOptions{AnchorKey: key}, func(f audit.Finding) error { fs = append(fs, f); return nil }); err != nil {
		t.Fatal(err)
	}
	for _, f := range fs {
		if f.Kind == audit.FindingRemoved {
			t.Fatalf("verify after the prunes: %+v", fs)
		}
	}
}
