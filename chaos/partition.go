package chaos

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"
)

// Partition is a split of the cluster's nodes (1-based): no node of
// Sides[0] reaches a node of Sides[1]; a Bridge node reaches both sides.
type Partition struct {
	Sides  [2][]int
	Bridge []int
}

// String describes the split, e.g. "[1 4] | 2 | [3 5]".
func (p Partition) String() string {
	if len(p.Bridge) == 0 {
		return fmt.Sprintf("%v | %v", p.Sides[0], p.Sides[1])
	}
	return fmt.Sprintf("%v | bridge %v | %v", p.Sides[0], p.Bridge, p.Sides[1])
}

// Pairs are the links the partition cuts.
func (p Partition) Pairs() [][2]int {
	var out [][2]int
	for _, a := range p.Sides[0] {
		for _, b := range p.Sides[1] {
			out = append(out, [2]int{a, b})
		}
	}
	return out
}

// The partitions the harness makes, around the queue stream's leader.
const (
	// LeaderInMinority: the leader and (n-1)/2-1 other nodes on one side
	// (n=3: the leader alone; n=5: the leader and one more), the
	// majority on the other.
	LeaderInMinority = "minority"
	// LeaderInMajority: the leader with a bare majority, the rest apart.
	LeaderInMajority = "majority"
	// LeaderBridged: one node sees both sides, the leader on one side
	// with (n-3)/2 others, the rest on the other (n=5: {L,a} | b | {c,d}).
	LeaderBridged = "bridge"
)

// PlanPartition splits nodes 1..n around leader; rng orders the other
// nodes (the same number makes the same split).
func PlanPartition(kind string, n, leader int, rng *rand.Rand) (Partition, error) {
	if n < 3 || leader < 1 || leader > n {
		return Partition{}, fmt.Errorf("no %s partition of %d nodes around n%d", kind, n, leader)
	}
	var others []int
	for i := 1; i <= n; i++ {
		if i != leader {
			others = append(others, i)
		}
	}
	rng.Shuffle(len(others), func(a, b int) { others[a], others[b] = others[b], others[a] })
	side := func(k int) []int { s := append([]int{leader}, others[:k]...); slices.Sort(s); return s }
	rest := func(k int) []int { s := slices.Clone(others[k:]); slices.Sort(s); return s }
	switch kind {
	case LeaderInMinority:
		k := (n-1)/2 - 1
		return Partition{Sides: [2][]int{side(k), rest(k)}}, nil
	case LeaderInMajority:
		k := n/2 + 1 - 1
		return Partition{Sides: [2][]int{side(k), rest(k)}}, nil
	case LeaderBridged:
		bridge := others[0]
		others = others[1:]
		k := (n - 3) / 2
		return Partition{Sides: [2][]int{side(k), rest(k)}, Bridge: []int{bridge}}, nil
	}
	return Partition{}, fmt.Errorf("unknown partition %q", kind)
}

// partition returns a fault that splits the cluster around the queue
// stream's leader (see PlanPartition) and mends it after the heal time.
func partition(kind string) func(context.Context, *Cluster, *rand.Rand) (string, func(context.Context) error, error) {
	return func(ctx context.Context, c *Cluster, rng *rand.Rand) (string, func(context.Context) error, error) {
		l, _, err := c.StreamLeader(ctx)
		if err != nil {
			return "", nil, err
		}
		p, err := PlanPartition(kind, len(c.Nodes), l, rng)
		if err != nil {
			return "", nil, err
		}
		mend, err := cutPartition(ctx, c, p)
		if err != nil {
			return "", nil, err
		}
		return fmt.Sprintf("partitioned %s (leader n%d)", p, l), mend, nil
	}
}

// packetFault returns a fault that delays and/or drops the packets every
// node sends, removed after the heal time.
func packetFault(delay, jitter time.Duration, loss float64) func(context.Context, *Cluster, *rand.Rand) (string, func(context.Context) error, error) {
	return func(ctx context.Context, c *Cluster, rng *rand.Rand) (string, func(context.Context) error, error) {
		var undo []func(context.Context) error
		heal := func(ctx context.Context) error {
			var errs []error
			for _, u := range undo {
				errs = append(errs, u(ctx))
			}
			return errors.Join(errs...)
		}
		for i := range c.Nodes {
			if delay > 0 {
				u, err := c.Net.Delay(ctx, i+1, delay, jitter, rng.Uint64())
				if err != nil {
					_ = heal(ctx)
					return "", nil, err
				}
				undo = append(undo, u)
			}
			if loss > 0 {
				u, err := c.Net.Loss(ctx, i+1, loss)
				if err != nil {
					_ = heal(ctx)
					return "", nil, err
				}
				undo = append(undo, u)
			}
		}
		var what []string
		if delay > 0 {
			what = append(what, fmt.Sprintf("held every packet %s±%s", delay, jitter))
		}
		if loss > 0 {
			what = append(what, fmt.Sprintf("dropped %.0f%% of packets", loss*100))
		}
		return fmt.Sprintf("%v on every node's link", what), heal, nil
	}
}

// cutPartition cuts every pair of nodes p separates and returns the mend
// that joins them again; a cut that fails mends those made before it.
func cutPartition(ctx context.Context, c *Cluster, p Partition) (func(context.Context) error, error) {
	var cut [][2]int
	mend := func(ctx context.Context) error {
		var errs []error
		for _, pr := range cut {
			errs = append(errs, c.Net.Mend(ctx, pr[0], pr[1]))
		}
		return errors.Join(errs...)
	}
	for _, pr := range p.Pairs() {
		if err := c.Net.Cut(ctx, pr[0], pr[1]); err != nil {
			_ = mend(ctx)
			return nil, err
		}
		cut = append(cut, pr)
	}
	return mend, nil
}
