package chaos

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestPlanPartition: every split covers each node once, keeps the leader
// on the first side with the sizes its kind promises (3 and 5 nodes),
// cuts only links between the sides, and is the same for the same
// number; bad input is refused.
func TestPlanPartition(t *testing.T) {
	want := map[string]map[int][3]int{ // kind -> nodes -> sizes of side 0, bridge, side 1
		LeaderInMinority: {3: {1, 0, 2}, 5: {2, 0, 3}},
		LeaderInMajority: {3: {2, 0, 1}, 5: {3, 0, 2}},
		LeaderBridged:    {3: {1, 1, 1}, 5: {2, 1, 2}},
	}
	for kind, byN := range want {
		for n, sizes := range byN {
			for leader := 1; leader <= n; leader++ {
				p, err := PlanPartition(kind, n, leader, rand.New(rand.NewPCG(uint64(leader), 1)))
				if err != nil {
					t.Fatalf("%s n=%d: %v", kind, n, err)
				}
				if got := [3]int{len(p.Sides[0]), len(p.Bridge), len(p.Sides[1])}; got != sizes {
					t.Errorf("%s n=%d leader %d: sizes %v, want %v (%s)", kind, n, leader, got, sizes, p)
				}
				if !slices.Contains(p.Sides[0], leader) {
					t.Errorf("%s n=%d: leader n%d not on side 0 (%s)", kind, n, leader, p)
				}
				all := slices.Concat(p.Sides[0], p.Bridge, p.Sides[1])
				slices.Sort(all)
				var one []int
				for i := 1; i <= n; i++ {
					one = append(one, i)
				}
				if !slices.Equal(all, one) {
					t.Errorf("%s n=%d: nodes %v, want each of 1..%d once", kind, n, all, n)
				}
				if got := len(p.Pairs()); got != sizes[0]*sizes[2] {
					t.Errorf("%s n=%d: %d links cut, want %d", kind, n, got, sizes[0]*sizes[2])
				}
				for _, pr := range p.Pairs() {
					if slices.Contains(p.Bridge, pr[0]) || slices.Contains(p.Bridge, pr[1]) {
						t.Errorf("%s: the bridge's link %v is cut", kind, pr)
					}
				}
				again, _ := PlanPartition(kind, n, leader, rand.New(rand.NewPCG(uint64(leader), 1)))
				if again.String() != p.String() {
					t.Errorf("%s: the same number splits %s, then %s", kind, p, again)
				}
			}
		}
	}
	for _, bad := range []struct {
		kind      string
		n, leader int
	}{{"sideways", 3, 1}, {LeaderBridged, 2, 1}, {LeaderInMinority, 3, 0}, {LeaderInMinority, 5, 6}} {
		if _, err := PlanPartition(bad.kind, bad.n, bad.leader, rand.New(rand.NewPCG(1, 1))); err == nil {
			t.Errorf("PlanPartition(%q, %d, %d) accepted", bad.kind, bad.n, bad.leader)
		}
	}
}

// TestElectionsBreakdown: leader changes are read from nats-server log
// lines, and the stall after a fault is split into the elections and the
// wait for the first completion after them.
func TestElectionsBreakdown(t *testing.T) {
	lines := []string{
		"[12] 2026/11/29 00:10:00.000000 [INF] Starting nats-server",
		"[12] 2026/11/29 00:10:04.500000 [INF] JetStream cluster new stream leader for '$G > TRELLIS_QUEUE'",
		"[12] 2026/11/29 00:10:05.250000 [INF] JetStream cluster new consumer leader for '$G > TRELLIS_QUEUE > queue-chaos-p2'",
		"[12] 2026/11/29 00:10:06.000000 [INF] JetStream cluster new consumer leader for '$G > TRELLIS_VINE > other'",
		"[12] 2026/11/29 00:10:06.500000 [INF] JetStream cluster new consumer leader for '$G > TRELLIS_QUEUE > queue-dependants'",
		"[12] 2026/11/29 00:10:07.000000 [INF] Self is new JetStream cluster metadata leader",
		"garbage",
		"[12] not a time [INF] JetStream cluster new stream leader for '$G > X'",
	}
	var els []Election
	for _, l := range lines {
		if e, ok := parseElection("n2", l); ok {
			els = append(els, e)
		}
	}
	if len(els) != 5 || els[0].What != "stream TRELLIS_QUEUE" || els[1].What != "consumer TRELLIS_QUEUE > queue-chaos-p2" || els[4].What != "meta" {
		t.Fatalf("elections %+v", els)
	}
	at := time.Date(2026, 11, 29, 0, 10, 0, 0, time.UTC)
	evs := []logEvent{
		{Type: "completed", AggregateID: "A", Stored: at.Add(5 * time.Second)}, // before the consumer's leader
		{Type: "completed", AggregateID: "B", Stored: at.Add(6 * time.Second)},
	}
	b := breakdown(els, evs, "TRELLIS_QUEUE", at, at.Add(12*time.Second), time.Time{})
	if b.Stream != 4500*time.Millisecond || b.Consumers != 5250*time.Millisecond || b.FirstCompletion != 6*time.Second || len(b.Changes) != 2 {
		t.Errorf("breakdown %+v", b)
	}
	if b := breakdown(els, nil, "TRELLIS_QUEUE", at.Add(time.Hour), at.Add(2*time.Hour), time.Time{}); b.Stream != -1 || b.FirstCompletion != -1 {
		t.Errorf("breakdown with nothing in the window: %+v", b)
	}
}

// TestQueueMessages: the netlink messages of the delay queue encode and
// parse (a queued packet's id is found; truncated or malformed input
// yields nothing rather than a panic).
func TestQueueMessages(t *testing.T) {
	hdr := []byte{0, 0, 0x12, 0x34, 0x08, 0x00, 3} // packet id 0x1234, hw protocol, hook
	m := message(nfqnlMsgPacket, 0, 7, attr(5, []byte{1, 2, 3}), attr(nfqaPacketHdr, hdr))
	two := append(append([]byte(nil), m...), m...)
	msgs := splitMessages(two)
	if len(msgs) != 2 {
		t.Fatalf("%d messages, want 2", len(msgs))
	}
	for _, msg := range msgs {
		if msg.typ != nfnlSubsysQueue<<8|nfqnlMsgPacket {
			t.Errorf("type %#x", msg.typ)
		}
		if id, ok := packetID(msg.data); !ok || id != 0x1234 {
			t.Errorf("packet id %#x %v, want 0x1234", id, ok)
		}
	}
	for cut := 0; cut < len(m); cut++ {
		for _, msg := range splitMessages(m[:cut]) {
			packetID(msg.data)
		}
		if cut >= 16 {
			packetID(m[16:cut])
		}
	}
	if _, ok := packetID(message(nfqnlMsgPacket, 0, 7, attr(5, []byte{1}))[16:]); ok {
		t.Error("a message without a packet header has an id")
	}
}

// TestTableSaysUnreadable: a run whose log could not be read counts its
// adds as lost, and the table says why.
func TestTableSaysUnreadable(t *testing.T) {
	rs := []*Result{
		{Fault: "power-loss-all", Check: Check{Acked: 5, Lost: 5, Unreadable: true, Verify: "ok"}, Resume: []time.Duration{-1}},
		{Fault: "power-loss-all", Check: Check{Acked: 3, Verify: "ok"}, Resume: []time.Duration{2 * time.Second}},
	}
	var b strings.Builder
	PrintTable(&b, Table(rs))
	want := "| power-loss-all | 2 | 8 | 5 (log unreadable in 1 run(s)) | 0 | 0 | 0 | none, 2.0 s | ok |"
	if !strings.Contains(b.String(), want) {
		t.Errorf("table:\n%s\nwant the row %s", b.String(), want)
	}
}

// TestRegressionsNameFaults: every kept regression names a fault the
// harness knows and a heal within its duration.
func TestRegressionsNameFaults(t *testing.T) {
	for _, r := range Regressions() {
		if _, err := FaultByName(r.Fault); err != nil {
			t.Errorf("regression %q: %v", r.Name, err)
		}
		if r.Runs < 1 || r.Heal <= 0 || r.Duration < r.Heal || r.Test == "" {
			t.Errorf("regression %q: runs %d, heal %s, duration %s, test %q", r.Name, r.Runs, r.Heal, r.Duration, r.Test)
		}
	}
}
