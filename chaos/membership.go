package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/trellis/trellis/events"
)

// peerRemove is a membership change: the queue stream's leader is
// removed from the stream's peers ($JS.API.STREAM.PEER.REMOVE, as an
// operator replacing a node does), and JetStream moves that replica to a
// node that held none, which catches up from the others. With isolate,
// the leader is first cut off the network (isolate-leader) and removed
// from the healthy side once the stream has a new leader there — Jepsen
// found membership changes combined with partitions losing writes
// (nats-server #7545). It needs a node beyond the replicas (5 nodes, R3):
// on 3 nodes JetStream has nowhere to move the replica.
func peerRemove(isolate bool) func(context.Context, *Cluster, *rand.Rand) (string, func(context.Context) error, error) {
	return func(ctx context.Context, c *Cluster, _ *rand.Rand) (string, func(context.Context) error, error) {
		if len(c.Nodes) <= c.Replicas {
			return "", nil, fmt.Errorf("%w: a membership change needs a node beyond the %d replicas (NODES=5 REPLICAS=3)", ErrUnsupported, c.Replicas)
		}
		l, _, err := c.StreamLeader(ctx)
		if err != nil {
			return "", nil, err
		}
		repair := func(context.Context) error { return nil }
		what := ""
		if isolate {
			if err := c.Net.Isolate(ctx, l); err != nil {
				return "", nil, err
			}
			repair = func(ctx context.Context) error { return c.Net.Reconnect(ctx, l) }
			// Wait for a leader on the healthy side (the isolated node
			// still calls itself leader until it notices).
			if err := waitFor(ctx, 60*time.Second, func() bool { nl, _, err := c.streamLeader(ctx); return err == nil && nl != l }); err != nil {
				return "", repair, fmt.Errorf("no new queue stream leader after isolating n%d: %w", l, err)
			}
			what = fmt.Sprintf("isolated n%d, then ", l)
		}
		at := time.Now()
		if err := c.removePeer(ctx, c.Nodes[l-1].Name); err != nil {
			return "", repair, err
		}
		what += fmt.Sprintf("removed n%d (the leader) from %s's peers (accepted after %s)", l, events.StreamQueue, time.Since(at).Round(time.Millisecond))
		return what, repair, nil
	}
}

// removePeer asks JetStream to remove peer from the queue stream,
// asking again for up to a minute while the cluster cannot answer (a
// meta leader being elected).
func (c *Cluster) removePeer(ctx context.Context, peer string) error {
	body, _ := json.Marshal(map[string]string{"peer": peer})
	var last error
	err := waitFor(ctx, 60*time.Second, func() bool {
		nc, err := nats.Connect(c.URLs(), nats.Timeout(2*time.Second))
		if err != nil {
			last = err
			return false
		}
		defer nc.Close()
		msg, err := nc.Request("$JS.API.STREAM.PEER.REMOVE."+events.StreamQueue, body, 5*time.Second)
		if err != nil {
			last = err
			return false
		}
		var resp struct {
			Success bool `json:"success"`
			Error   *struct {
				Code        int    `json:"code"`
				ErrCode     int    `json:"err_code"`
				Description string `json:"description"`
			} `json:"error"`
		}
		if err := json.Unmarshal(msg.Data, &resp); err != nil {
			last = err
			return false
		}
		if resp.Error != nil {
			last = fmt.Errorf("%s (%d)", resp.Error.Description, resp.Error.ErrCode)
			return false
		}
		return resp.Success
	})
	if err != nil {
		return fmt.Errorf("remove %s from %s: %w (last answer: %v)", peer, events.StreamQueue, err, last)
	}
	return nil
}
