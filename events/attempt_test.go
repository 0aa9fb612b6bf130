package events_test

import (
	"bufio"
	"context"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/trellis/trellis/command"
	"github.com/trellis/trellis/events"
	"github.com/trellis/trellis/events/eventstest"
)

// silentProxy forwards NATS connections to a server and swallows the
// first publishes to subjects with a prefix, as a stream leader cut off
// from the cluster would: no answer, no error, only silence.
type silentProxy struct {
	ln     net.Listener
	target string
	prefix string
	mu     sync.Mutex
	drop   int // publishes still to swallow
	gone   int // publishes swallowed
}

func startSilentProxy(t *testing.T, target, prefix string, drop int) *silentProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &silentProxy{ln: ln, target: target, prefix: prefix, drop: drop}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", target)
			if err != nil {
				_ = c.Close()
				continue
			}
			go func() { _, _ = io.Copy(c, s); _ = c.Close() }()
			go p.forward(c, s)
		}
	}()
	return p
}

// url is the nats:// URL clients use to connect through the proxy.
func (p *silentProxy) url() string { return "nats://" + p.ln.Addr().String() }

// storeVia connects a store to the server at url; the connection closes
// when the test ends.
func storeVia(t *testing.T, url string, cfg events.StoreConfig) (*nats.Conn, *events.Store) {
	t.Helper()
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	store, err := events.NewStore(nc, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return nc, store
}

func (p *silentProxy) swallowed() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.gone
}

// forward copies client → server protocol lines, swallowing a publish
// (PUB or HPUB and its payload) while drop lasts.
func (p *silentProxy) forward(c, s net.Conn) {
	defer s.Close()
	r := bufio.NewReader(c)
	for {
		line, err := r.ReadBytes('\n')
		if err != nil {
			return
		}
		f := strings.Fields(string(line))
		if len(f) >= 3 && (f[0] == "PUB" || f[0] == "HPUB") {
			size, err := strconv.Atoi(f[len(f)-1])
			if err != nil {
				return
			}
			payload := make([]byte, size+2)
			if _, err := io.ReadFull(r, payload); err != nil {
				return
			}
			p.mu.Lock()
			swallow := p.drop > 0 && strings.HasPrefix(f[1], p.prefix)
			if swallow {
				p.drop--
				p.gone++
			}
			p.mu.Unlock()
			if swallow {
				continue
			}
			line = append(line, payload...)
		}
		if _, err := s.Write(line); err != nil {
			return
		}
	}
}

// TestSilentAttemptSentAgain: an append whose first attempt meets silence
// (a leader cut off: no answer, no error) is sent again after the store's
// AttemptTimeout, not after its RequestTimeout (an hour here: were the
// attempt bounded by it, the append would still wait when the test's
// minute is up), and is stored once. The same for a call of several
// events (the group commit's batch, then its events one by one), and for
// a load's direct get.
func TestSilentAttemptSentAgain(t *testing.T) {
	t.Parallel()
	b := eventstest.Start(t)
	proxy := startSilentProxy(t, b.Server.Addr().String(), "trellis.queue.", 1)
	_, store := storeVia(t, proxy.url(), events.StoreConfig{RequestTimeout: time.Hour, AttemptTimeout: 300 * time.Millisecond})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	e := env(t, "added", events.NewID(time.Now()))
	expect := events.Expect{Filter: "trellis.queue.*." + e.AggregateID + ".>"}
	a, err := store.Append(ctx, "trellis.queue.default."+e.AggregateID+".added", e, expect, "")
	if err != nil {
		t.Fatalf("append after a silent attempt: %v", err)
	}
	if proxy.swallowed() != 1 {
		t.Fatalf("the proxy swallowed %d publishes, want 1 (the test does not test what it claims)", proxy.swallowed())
	}
	recs, _, err := b.Store.Load(ctx, events.StreamQueue, expect.Filter)
	if err != nil || len(recs) != 1 || recs[0].Seq != a.Seq {
		t.Fatalf("stored %d events (%v), want 1 at #%d", len(recs), err, a.Seq)
	}

	// Several events of one call: the first message of their batch is
	// swallowed.
	proxy.mu.Lock()
	proxy.drop = 1
	proxy.mu.Unlock()
	var ps []events.Pending
	for i := 0; i < 20; i++ {
		e := env(t, "added", events.NewID(time.Now()))
		ps = append(ps, events.Pending{Subject: "trellis.queue.default." + e.AggregateID + ".added", Envelope: e,
			Expect: events.Expect{Filter: "trellis.queue.*." + e.AggregateID + ".>"}})
	}
	res := store.AppendAll(ctx, ps)
	for i, r := range res {
		if r.Err != nil {
			t.Fatalf("event %d after a silent attempt: %v", i, r.Err)
		}
		recs, _, err := b.Store.Load(ctx, events.StreamQueue, ps[i].Expect.Filter)
		if err != nil || len(recs) != 1 || recs[0].Seq != r.Seq {
			t.Fatalf("event %d: stored %d times (%v), want once at #%d", i, len(recs), err, r.Seq)
		}
	}
	if proxy.swallowed() != 2 {
		t.Fatalf("the proxy swallowed %d publishes, want 2", proxy.swallowed())
	}

	// A load whose direct get meets silence (a replica cut off) asks
	// again.
	proxy.mu.Lock()
	proxy.prefix, proxy.drop = "$JS.API.DIRECT.GET.", 1
	proxy.mu.Unlock()
	recs, last, err := store.Load(ctx, events.StreamQueue, expect.Filter)
	if err != nil || len(recs) != 1 || last != a.Seq {
		t.Fatalf("load after a silent direct get: %d events, last #%d (%v); want 1 at #%d", len(recs), last, err, a.Seq)
	}
	if proxy.swallowed() != 3 {
		t.Fatalf("the proxy swallowed %d publishes, want 3", proxy.swallowed())
	}
}

// TestSilentSnapshotReadSentAgain: a command's load of an aggregate with
// snapshots reads its last snapshot with a direct get; one that meets
// silence (a replica cut off) is sent again after the store's
// AttemptTimeout like every other direct get of a load, not after its
// RequestTimeout (an hour here: the load would still wait when the
// test's minute is up).
func TestSilentSnapshotReadSentAgain(t *testing.T) {
	t.Parallel()
	b := eventstest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	e := env(t, "snapshot", events.NewID(time.Now()))
	filter := "trellis.queue.*." + e.AggregateID + ".>"
	a, err := b.Store.Append(ctx, "trellis.queue.default."+e.AggregateID+".snapshot", e, events.Expect{Filter: filter}, "")
	if err != nil {
		t.Fatal(err)
	}
	proxy := startSilentProxy(t, b.Server.Addr().String(), "$JS.API.DIRECT.GET.", 1)
	_, store := storeVia(t, proxy.url(), events.StoreConfig{RequestTimeout: time.Hour, AttemptTimeout: 300 * time.Millisecond})
	runner := command.New(store, command.Kind[int]{
		Name:     "counter",
		Stream:   events.StreamQueue,
		Filter:   func(id string) string { return "trellis.queue.*." + id + ".>" },
		Fold:     func(n int, _ events.Recorded) (int, error) { return n + 1, nil },
		Snapshot: func(id string) string { return "trellis.queue.default." + id + ".snapshot" },
	}, command.Config{})
	st, err := runner.Load(ctx, e.AggregateID)
	if err != nil || st.Seq != a.Seq || st.Value != 1 {
		t.Fatalf("load after a silent snapshot read: #%d, %d events folded (%v); want #%d, 1", st.Seq, st.Value, err, a.Seq)
	}
	if proxy.swallowed() != 1 {
		t.Fatalf("the proxy swallowed %d publishes, want 1 (the test does not test what it claims)", proxy.swallowed())
	}
}
