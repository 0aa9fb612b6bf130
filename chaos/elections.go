package chaos

import (
	"bufio"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"
)

// Election is a leader change a node logged: of the JetStream meta
// group, of a stream or of a consumer.
type Election struct {
	At   time.Time
	Node string // the node that logged it (the new leader)
	What string // "meta", "stream NAME" or "consumer STREAM > NAME"
}

// natsLogTime is the time format of a nats-server log line (logtime_utc).
const natsLogTime = "2006/01/02 15:04:05.000000"

// parseElection reads one nats-server log line, false when it is not a
// leader change.
func parseElection(node, line string) (Election, bool) {
	// [pid] 2026/11/29 00:10:00.123456 [INF] JetStream cluster new stream leader for 'A > S'
	i := strings.Index(line, "] ")
	if i < 0 || len(line) < i+2+len(natsLogTime) {
		return Election{}, false
	}
	at, err := time.Parse(natsLogTime, line[i+2:i+2+len(natsLogTime)])
	if err != nil {
		return Election{}, false
	}
	msg := line[i+2+len(natsLogTime):]
	quoted := func() string {
		a, b := strings.Index(msg, "'"), strings.LastIndex(msg, "'")
		if a < 0 || b <= a {
			return ""
		}
		parts := strings.Split(msg[a+1:b], " > ")
		return strings.Join(parts[1:], " > ") // without the account
	}
	switch {
	case strings.Contains(msg, "Self is new JetStream cluster metadata leader"):
		return Election{At: at, Node: node, What: "meta"}, true
	case strings.Contains(msg, "new stream leader for"):
		return Election{At: at, Node: node, What: "stream " + quoted()}, true
	case strings.Contains(msg, "new consumer leader for"):
		return Election{At: at, Node: node, What: "consumer " + quoted()}, true
	}
	return Election{}, false
}

// Elections are the leader changes every node logged, oldest first.
func (c *Cluster) Elections() []Election {
	var out []Election
	for _, p := range c.Nodes {
		f, err := os.Open(p.log)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			if e, ok := parseElection(p.Name, sc.Text()); ok {
				out = append(out, e)
			}
		}
		f.Close()
	}
	sort.Slice(out, func(a, b int) bool { return out[a].At.Before(out[b].At) })
	return out
}

// claimConsumerPrefix starts the names of the harness queue's claim
// consumers (one per priority lane): the consumers a completion waits for.
const claimConsumerPrefix = "queue-" + Queue + "-"

// Breakdown says what the stall after a fault at was made of: when the
// queue stream and the last of the queue's claim consumers had a new
// leader, and when
// the first completion the stream stored after both came, each counted
// from at (negative: none within the window up to end).
type Breakdown struct {
	Stream, Consumers, FirstCompletion time.Duration
	Changes                            []string // the leader changes in the window, "+4.2s consumer TRELLIS_QUEUE > x on n2"
}

// String is the breakdown in one line.
func (b Breakdown) String() string {
	f := func(d time.Duration) string {
		if d < 0 {
			return "–"
		}
		return fmt.Sprintf("%.1f s", d.Seconds())
	}
	return fmt.Sprintf("stream leader %s, last claim consumer leader %s, first completion after them %s", f(b.Stream), f(b.Consumers), f(b.FirstCompletion))
}

// breakdown relates the leader changes of the queue stream between the
// fault at and its repair to the completions stored from at until end
// (zero: no end).
func breakdown(els []Election, evs []logEvent, stream string, at, repaired, end time.Time) Breakdown {
	b := Breakdown{Stream: -1, Consumers: -1, FirstCompletion: -1}
	in := func(t time.Time) bool { return !t.Before(at) && (end.IsZero() || t.Before(end)) }
	last := at
	for _, e := range els {
		if e.At.Before(at) || !e.At.Before(repaired) {
			continue
		}
		d := e.At.Sub(at)
		switch {
		case e.What == "stream "+stream:
			b.Stream = d
		case strings.HasPrefix(e.What, "consumer "+stream+" > "+claimConsumerPrefix):
			b.Consumers = d
		default:
			continue
		}
		b.Changes = append(b.Changes, fmt.Sprintf("+%.1fs %s on %s", d.Seconds(), e.What, e.Node))
		if e.At.After(last) {
			last = e.At
		}
	}
	var first time.Time
	for _, e := range evs {
		if e.Type == "completed" && e.Stored.After(last) && in(e.Stored) && (first.IsZero() || e.Stored.Before(first)) {
			first = e.Stored
		}
	}
	if !first.IsZero() {
		b.FirstCompletion = first.Sub(at)
	}
	return b
}
