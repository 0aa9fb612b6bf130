package main

import (
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"
)

// The "claims in add order" check of TestRandomizedProcesses.
//
// A queue hands its tasks out in add order within a priority: each
// priority lane is a JetStream consumer delivering its dispatches in
// stream order, and the driver adds one request at a time, so stream
// order is add order (a bulk add's tasks in the request's order). Claims
// happen later than deliveries, by how long a dispatch waits in a pool's
// buffer or in a slot, so across claimants the claim order may depart
// from the add order; within one slot of a local pool it may not: a slot
// takes one dispatch at a time from its pool's buffer, which holds them
// in delivery order. The check therefore counts, for each claim, the
// later-added tasks of its lane claimed before it ("inversions"):
//   - per slot, at most slotBound (0 for a local pool's slot; 1 for a
//     token pool's, whose claims the server makes and whose abandoned
//     claim request may be served late);
//   - across every claimant, at most globalBound: what all claimants can
//     hold between delivery and claim at once (their slots and what their
//     pools fetch ahead).
//
// Only first claims of plain tasks (no delay, no prerequisite) through
// their add's own first delivery count: a redelivered dispatch (given
// back, its claimant killed or its claim refused) legitimately comes
// later, as does a task delayed or waiting for another. A task added
// before a serve SIGKILL and claimed after it is left out too: a server
// that loses its consumer state delivers again as a first delivery.

// firstClaim is one task's first claim, as the order check reads it.
type firstClaim struct {
	task     string
	index    int // the task's position in the add order
	priority int
	by       string // the claimant (worker pool slot or agent)
	at       time.Time
}

// claimOrderProblems returns the claims that break the order (see above).
func claimOrderProblems(claims []firstClaim, slotBound func(slot string) int, globalBound int) []string {
	byLane := map[int][]firstClaim{}
	for _, c := range claims {
		byLane[c.priority] = append(byLane[c.priority], c)
	}
	var problems []string
	for lane, cs := range byLane {
		sort.Slice(cs, func(a, b int) bool { return cs[a].at.Before(cs[b].at) })
		for i, c := range cs {
			global, slot := 0, 0
			var slotEarlier []string
			for _, e := range cs[:i] { // claimed before c
				if e.index > c.index {
					global++
					if e.by == c.by {
						slot++
						slotEarlier = append(slotEarlier, fmt.Sprintf("%s (#%d)", e.task, e.index))
					}
				}
			}
			if slot > slotBound(c.by) {
				problems = append(problems, fmt.Sprintf("priority %d: %s (#%d) claimed by %s after %d tasks added later claimed by the same slot: %s",
					lane, c.task, c.index, c.by, slot, strings.Join(slotEarlier, ", ")))
			}
			if global > globalBound {
				problems = append(problems, fmt.Sprintf("priority %d: %s (#%d) claimed by %s after %d tasks added later (at most %d may be held ahead of it)",
					lane, c.task, c.index, c.by, global, globalBound))
			}
		}
	}
	sort.Strings(problems)
	return problems
}

// TestClaimOrderCheck: the order check passes claims that concurrent
// slots and pools interleave, and fails claims made in batches in reverse
// (the old bulk-add defect stored a batch as 4,3,2,1,5), whether one slot
// or several take the batch, and claims held back further than every
// claimant can hold.
func TestClaimOrderCheck(t *testing.T) {
	t.Parallel()
	base := time.Unix(1700000000, 0)
	// claims builds first claims of tasks claimed in the given add
	// positions, one millisecond apart, each by the slot slots returns.
	claims := func(order []int, slot func(i int) string) []firstClaim {
		var out []firstClaim
		for i, idx := range order {
			out = append(out, firstClaim{task: fmt.Sprint("t", idx), index: idx, priority: 2, by: slot(i), at: base.Add(time.Duration(i) * time.Millisecond)})
		}
		return out
	}
	local := func(string) int { return 0 }
	roundRobin := func(n int) func(int) string { return func(i int) string { return fmt.Sprintf("w/%d", i%n) } }
	seq := func(n int) []int {
		out := make([]int, n)
		for i := range out {
			out[i] = i
		}
		return out
	}
	// Two slots whose claims interleave: adjacent tasks swapped between
	// slots, each slot in order.
	swapped := []int{1, 0, 3, 2, 5, 4, 7, 6}
	for name, c := range map[string][]firstClaim{
		"in order, one slot":         claims(seq(20), roundRobin(1)),
		"in order, three slots":      claims(seq(20), roundRobin(3)),
		"swapped between two slots":  claims(swapped, roundRobin(2)),
		"other lanes do not compare": append(claims(seq(5), roundRobin(1)), firstClaim{task: "urgent", index: 0, priority: 1, by: "w/0", at: base.Add(time.Hour)}),
	} {
		if p := claimOrderProblems(c, local, 8); len(p) > 0 {
			t.Errorf("%s: %v; want no problem", name, p)
		}
	}
	reversed := []int{3, 2, 1, 0, 4, 8, 7, 6, 5, 9}
	for name, c := range map[string][]firstClaim{
		"batches reversed, one slot":    claims(reversed, roundRobin(1)),
		"batches reversed, two slots":   claims(reversed, roundRobin(2)),
		"batches reversed, three slots": claims(reversed, roundRobin(3)),
	} {
		if p := claimOrderProblems(c, local, 8); len(p) == 0 {
			t.Errorf("%s: no problem found", name)
		}
	}
	// One task held back past more claims than all claimants hold.
	late := append(seq(12)[1:], 0)
	if p := claimOrderProblems(claims(late, func(i int) string { return fmt.Sprint("agent-", i) }), local, 8); len(p) != 1 || !strings.Contains(p[0], "t0 (#0)") {
		t.Errorf("a task claimed after 11 later ones (bound 8): %v; want one problem naming it", p)
	}
}
