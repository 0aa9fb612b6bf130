package audit

import (
	"context"
	"fmt"
	"strings"

	"github.com/trellis/trellis/events"
	"github.com/trellis/trellis/taskqueue"
)

// The kinds of tamper finding trellis audit verify reports.
const (
	// FindingRemoved: an event is missing: the stream shows deleted
	// sequences, or an event chains to one the log no longer holds.
	FindingRemoved = "removed"
	// FindingAltered: an event's content no longer matches what its
	// aggregate's next event recorded, its chain link was stripped, its
	// large payload no longer matches its digest, or (in an export) a line
	// no longer matches its hash.
	FindingAltered = "altered"
	// FindingReordered: an event stands elsewhere in its aggregate's
	// chain than its links say (moved, or swapped with another).
	FindingReordered = "reordered"
	// FindingDuplicated: the same event is stored twice.
	FindingDuplicated = "duplicated"
	// FindingForeign: an event stored without the message id every
	// Trellis append carries: published from outside Trellis (an edit
	// re-published, or a forged event).
	FindingForeign = "foreign"
	// FindingMalformed: a message on a Trellis subject that is not a
	// Trellis event (not an envelope, or a subject no aggregate has).
	FindingMalformed = "malformed"
	// FindingMisdated: an event's id was not made when its time says, or
	// the log stored it far from that time: forged or back-dated.
	FindingMisdated = "misdated"
	// FindingTruncated: an export ends early (no trailer), or holds lines
	// after its trailer, or its trailer's counts or digest disagree.
	FindingTruncated = "truncated"
)

// Finding is one piece of tamper evidence, with its position in the log
// (stream, sequence, aggregate) and, for an export, its line.
type Finding struct {
	// Kind is one of removed, altered, reordered, duplicated, foreign,
	// malformed, truncated.
	Kind string `json:"kind"`
	// Stream is the stream the evidence is in.
	Stream string `json:"stream,omitempty"`
	// Seq is the stream sequence where it shows (the first of a range of
	// deleted sequences).
	Seq uint64 `json:"seq,omitempty"`
	// ToSeq ends a range of deleted sequences.
	ToSeq uint64 `json:"to_seq,omitempty"`
	// Subject is the event's subject.
	Subject string `json:"subject,omitempty"`
	// Aggregate names the aggregate (a task id, <queue>/_control, a graph
	// id, a task name, a memory scope, <repo>/<file token>).
	Aggregate string `json:"aggregate,omitempty"`
	// EventID is the event's id (ULID).
	EventID string `json:"event_id,omitempty"`
	// Line is the line of an export file (verify --file).
	Line int `json:"line,omitempty"`
	// Projection names the running server's projection that folded
	// events the log no longer holds (see VerifyOptions.Projections).
	Projection string `json:"projection,omitempty"`
	// Detail says what is wrong, in words.
	Detail string `json:"detail"`
}

// String formats a finding on one line for people.
func (f Finding) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%-10s", f.Kind)
	if f.Stream != "" {
		fmt.Fprintf(&b, " %s", f.Stream)
	}
	if f.Seq > 0 {
		if f.ToSeq > f.Seq {
			fmt.Fprintf(&b, " #%d-#%d", f.Seq, f.ToSeq)
		} else {
			fmt.Fprintf(&b, " #%d", f.Seq)
		}
	}
	if f.Line > 0 {
		fmt.Fprintf(&b, " line %d", f.Line)
	}
	if f.Aggregate != "" {
		fmt.Fprintf(&b, " %s", f.Aggregate)
	}
	fmt.Fprintf(&b, ": %s", f.Detail)
	return b.String()
}

// aggRef names the aggregate an event belongs to.
type aggRef struct {
	// name is for people: a task id, <queue>/_control, a graph id, a
	// task name, a memory scope, <repo>/<file token>.
	name string
	// key is the subject filter of the aggregate's events: the scope the
	// command runner chains in (its Kind's Filter), so the chain's identity.
	key string
	// read is a filter of the same events that the server resolves
	// faster (no wildcard before the aggregate's token).
	read string
}

// aggregateOf returns the aggregate an event on subject belongs to; ok is
// false for a subject no Trellis aggregate has.
func aggregateOf(subject string) (aggRef, bool) {
	t := strings.Split(subject, ".")
	if len(t) < 4 || t[0] != "trellis" {
		return aggRef{}, false
	}
	for _, tok := range t {
		if tok == "" {
			return aggRef{}, false
		}
	}
	own := strings.Join(t[:len(t)-1], ".") + ".>"
	switch t[1] {
	case "queue":
		return queueAggregate(t)
	case "vine", "tasks", "memory":
		if len(t) != 4 {
			return aggRef{}, false
		}
		return aggRef{t[2], own, own}, true
	case "auth": // trellis.auth.<token name>.<event>
		if len(t) != 4 {
			return aggRef{}, false
		}
		return aggRef{"token/" + t[2], own, own}, true
	case "workflows": // trellis.workflows.{run,def}.<id>.<event>
		if len(t) != 5 {
			return aggRef{}, false
		}
		return aggRef{t[2] + "/" + t[3], own, own}, true
	case "chunks":
		if len(t) != 5 {
			return aggRef{}, false
		}
		return aggRef{t[2] + "/" + t[3], own, own}, true
	}
	return aggRef{}, false
}

// queueAggregate is the aggregate of a queue stream subject (split in
// tokens): a task (trellis.queue.<q>.<task>.<type>[.p<n>|.d]), a queue's
// controls (_control) or gate (_gate), a concurrency key's gate
// (_key.<hash>), a unique key (_unique.<hash>), an idempotency key's
// marker (_idem.<hash>) or a schedule (_schedule.<name>, whatever its
// queue). Timers (_timer) are outside the chain: see timerLedger.
func queueAggregate(t []string) (aggRef, bool) {
	q, id := t[2], t[3]
	prefix := "trellis.queue." + q + "." + id
	switch {
	case len(t) == 5 && id == taskqueue.ControlID:
		return aggRef{q + "/" + taskqueue.ControlID, taskqueue.ControlFilter(q), prefix + ".>"}, true
	case len(t) == 5 && id == "_gate":
		return aggRef{q + "/_gate", prefix + ".>", prefix + ".>"}, true
	case len(t) == 6 && (id == "_key" || id == "_unique" || id == "_idem"):
		own := prefix + "." + t[4] + ".>"
		return aggRef{q + "/" + id + "." + t[4], own, own}, true
	case len(t) == 6 && id == "_schedule":
		return aggRef{"schedule/" + t[4], taskqueue.ScheduleFilter(t[4]), prefix + "." + t[4] + ".>"}, true
	case len(t) == 5 && q == "_retention" && id == events.RetentionAggregate:
		// The retention log (prune records: see retention/).
		return aggRef{"retention", events.RetentionFilter, events.RetentionFilter}, true
	case strings.HasPrefix(id, "_"):
		return aggRef{}, false
	case len(t) == 5 || (len(t) == 6 && taskRoute(t[5])):
		// A task's chain spans queues (its filter has the queue as a
		// wildcard); task ids are unique across queues, so its own queue's
		// subjects hold every event of it.
		return aggRef{id, taskqueue.Filter(id), taskqueue.FilterIn(q, id)}, true
	}
	return aggRef{}, false
}

// taskRoute reports whether tok is a task subject's route: p<priority>
// (a dispatch outside the default lane) or d (an end with dependants).
func taskRoute(tok string) bool {
	if tok == "d" {
		return true
	}
	if len(tok) == 2 && tok[0] == 'p' && tok[1] >= '0' && tok[1] <= '9' {
		return true
	}
	return false
}

// chainItem is one event as the chain check sees it.
type chainItem struct {
	Stream  string
	Subject string
	Seq     uint64
	Line    int // in an export file (0 on the stream)
	ID      string
	Prev    string
	// Hash is the event's events.Hash ("" when it cannot be computed: a
	// large payload that cannot be resolved).
	Hash string
	// Scheduled: the server published it from a timer (a due or tick
	// event, decided when the timer was set: it carries no prev).
	Scheduled bool
	// Snapshot: an aggregate's snapshot (see snapshotCheck).
	Snapshot bool
}

// chainSource reads back the events of one aggregate, in log order (up to
// sequence upTo when not 0): the evidence when a link breaks, and where a
// check that began inside the log finds an aggregate's earlier events.
type chainSource interface {
	aggregate(ctx context.Context, stream string, ref aggRef, upTo uint64) ([]chainItem, error)
}

// chainHead is what the check remembers of an aggregate: its last event.
type chainHead struct {
	hash    string
	seq     uint64
	line    int
	chained bool // a link of this aggregate carried a prev
	unknown bool // the last event could not be hashed
	hasUnch bool // some link of this aggregate carried no prev
}

// ChainStats counts what the chain check saw on one stream.
type ChainStats struct {
	// Events is how many events were checked.
	Events uint64 `json:"events"`
	// Aggregates is how many aggregates began within the range (their
	// first event).
	Aggregates uint64 `json:"aggregates"`
	// Chained is how many links were verified (an event's prev matched
	// its aggregate's previous event).
	Chained uint64 `json:"chained"`
	// Unchained is how many links carried no prev: events from before the
	// chain existed, or appended by code that does not chain yet (code
	// memory ingest). Only JetStream's sequence gaps protect them.
	Unchained uint64 `json:"unchained"`
	// UnchainedAggregates is how many aggregates had such links.
	UnchainedAggregates uint64 `json:"unchained_aggregates"`
	// Anchored is how many aggregates were first seen chained to an event
	// before the checked range (verify --since, a partial export).
	Anchored uint64 `json:"anchored"`
	// Scheduled is how many events the server published from a timer (due,
	// tick): outside the chain, each matched to its fired timer.
	Scheduled uint64 `json:"scheduled"`
	// Timers is how many timers were still waiting to fire (outside the
	// chain), and TimersFired how many deleted sequences were timers
	// that fired.
	Timers      uint64 `json:"timers"`
	TimersFired uint64 `json:"timers_fired"`
	// Unverifiable is how many links could not be checked because the
	// event before them could not be hashed (reported on its own).
	Unverifiable uint64 `json:"unverifiable"`
	// Continued is how many aggregates a prune cut at a snapshot: their
	// first event in the log is that snapshot, chained to the archive.
	Continued uint64 `json:"continued,omitempty"`
	// Snapshots is how many snapshots were checked against the events
	// they replace (or a prune record that cut those).
	Snapshots uint64 `json:"snapshots,omitempty"`
}

// chainCheck follows every aggregate's hash chain through a stream read in
// order. It keeps every aggregate's last event (see headStore: a bounded
// number in memory, the rest spilled to a temporary file).
type chainCheck struct {
	src   chainSource
	heads *headStore
	// complete is true when the check began at the stream's first event,
	// so an aggregate it does not know has no earlier event; otherwise an
	// unknown aggregate's earlier events are read back from src.
	complete bool
	// anchoredOK: an aggregate first seen chained to an earlier event is
	// anchored before the range, not evidence of a removal (the range
	// does not start at the log's first event).
	anchoredOK bool
	// gaps are the deleted sequence ranges seen so far (evidence for
	// classifying a broken link).
	gaps  [][2]uint64
	stats ChainStats
	// continued are the snapshots trusted prune records name as the
	// first event the log keeps of an aggregate they cut (by sequence).
	continued map[uint64]events.Continuation
	// omitted are the ranges an archive leaves out on purpose.
	omitted [][2]uint64
}

// omit records sequences from..to an archive leaves out on purpose.
func (c *chainCheck) omit(from, to uint64) {
	if len(c.omitted) < 1<<16 {
		c.omitted = append(c.omitted, [2]uint64{from, to})
	}
}

// omittedBetween reports whether an omitted range lies strictly between
// sequences a and b.
func (c *chainCheck) omittedBetween(a, b uint64) bool {
	for _, g := range c.omitted {
		if g[1] > a && g[0] < b {
			return true
		}
	}
	return false
}

func newChainCheck(src chainSource, heads *headStore, complete, anchoredOK bool) *chainCheck {
	return &chainCheck{src: src, heads: heads, complete: complete, anchoredOK: anchoredOK}
}

// gap records deleted sequences from..to.
func (c *chainCheck) gap(from, to uint64) {
	if len(c.gaps) < 1<<16 {
		c.gaps = append(c.gaps, [2]uint64{from, to})
	}
}

// gapBetween returns the first deleted range strictly between a and b.
func (c *chainCheck) gapBetween(a, b uint64) ([2]uint64, bool) {
	for _, g := range c.gaps {
		if g[1] > a && g[0] < b {
			return g, true
		}
	}
	return [2]uint64{}, false
}

// check verifies it against its aggregate's previous event and returns
// what it found (nothing when the link holds).
func (c *chainCheck) check(ctx context.Context, it chainItem, ref aggRef) ([]Finding, error) {
	c.stats.Events++
	name := ref.name
	key := it.Stream + " " + ref.key
	head, known, err := c.heads.get(key)
	if err != nil {
		return nil, err
	}
	if !known && !c.complete {
		if head, err = c.recall(ctx, it, ref); err != nil {
			return nil, err
		}
	}
	var out []Finding
	finding := func(kind, detail string, args ...any) {
		out = append(out, Finding{Kind: kind, Stream: it.Stream, Seq: it.Seq, Line: it.Line, Subject: it.Subject,
			Aggregate: name, EventID: it.ID, Detail: fmt.Sprintf(detail, args...)})
	}
	next := &chainHead{hash: it.Hash, seq: it.Seq, line: it.Line, unknown: it.Hash == ""}
	switch {
	case it.Scheduled && it.Prev == "":
		// Decided when its timer was set, published when it fired: its
		// link is the timer's batch (see timerLedger); the next event
		// chains to it.
		c.stats.Scheduled++
		if head == nil {
			c.stats.Aggregates++
		} else {
			next.chained, next.hasUnch = head.chained, head.hasUnch
		}
	case head == nil && it.Prev == "":
		c.stats.Aggregates++
	case head == nil && c.anchoredOK:
		// Its earlier events lie before the checked range.
		c.stats.Anchored++
		c.stats.Aggregates++
		next.chained = true
	case head == nil && c.continues(it):
		// A prune cut its earlier events into an archive (see
		// snapshotCheck).
		c.stats.Continued++
		c.stats.Aggregates++
		next.chained = true
	case head == nil:
		all, err := c.src.aggregate(ctx, it.Stream, ref, 0)
		if err != nil {
			return nil, err
		}
		if later, ok := findHash(all, it.Prev, it); ok {
			finding(FindingReordered, "it is the first event of its aggregate here, but it chains to #%d, which comes after it", later.Seq)
		} else {
			finding(FindingRemoved, "it is the first event of its aggregate in the log, but it chains to an earlier event (prev %s) that is gone", short(it.Prev))
		}
		c.stats.Aggregates++
		next.chained = true
	case head.unknown:
		c.stats.Unverifiable++
		next.chained, next.hasUnch = head.chained || it.Prev != "", head.hasUnch
	case it.Prev == head.hash:
		c.stats.Chained++
		next.chained, next.hasUnch = true, head.hasUnch
	case it.Prev == "" && !head.chained:
		// Appended before the chain existed, or by code that does not
		// chain: nothing to verify but the sequence gaps.
		c.stats.Unchained++
		if !head.hasUnch {
			c.stats.UnchainedAggregates++
		}
		next.hasUnch = true
	case it.Prev == "":
		finding(FindingAltered, "it carries no prev, but its aggregate's chain ran up to #%d: its link was stripped", head.seq)
		next.chained, next.hasUnch = true, head.hasUnch
	case c.continues(it) || (it.Snapshot && it.Line > 0 && c.omittedBetween(head.seq, it.Seq)):
		// A prune cut the events between the open task's dispatch and
		// this snapshot into an archive (see snapshotCheck); in an
		// archive, an earlier archive holds them (the lines omitted).
		c.stats.Continued++
		next.chained, next.hasUnch = true, head.hasUnch
	default:
		f, err := c.classify(ctx, it, head, ref)
		if err != nil {
			return nil, err
		}
		finding(f.Kind, "%s", f.Detail)
		next.chained, next.hasUnch = true, head.hasUnch
	}
	if err := c.heads.put(key, next); err != nil {
		return nil, err
	}
	return out, nil
}

// recall returns the head of an aggregate the check has not seen, when
// the check began inside the log: the aggregate's last event before it,
// read back from the source (none when it has no earlier event).
func (c *chainCheck) recall(ctx context.Context, it chainItem, ref aggRef) (*chainHead, error) {
	var upTo uint64
	if it.Line == 0 {
		if it.Seq <= 1 {
			return nil, nil
		}
		upTo = it.Seq - 1
	}
	all, err := c.src.aggregate(ctx, it.Stream, ref, upTo)
	if err != nil {
		return nil, err
	}
	var h *chainHead
	for i, e := range all {
		if before(e, it) {
			if h == nil {
				h = &chainHead{}
			}
			h.hash, h.seq, h.line, h.unknown = e.Hash, e.Seq, e.Line, e.Hash == ""
			if i > 0 && e.Prev != "" {
				h.chained = true
			}
			if i > 0 && e.Prev == "" {
				h.hasUnch = true
			}
		}
	}
	return h, nil
}

// before reports whether a precedes b in the source's order.
func before(a, b chainItem) bool {
	if a.Line > 0 || b.Line > 0 {
		return a.Line < b.Line
	}
	return a.Seq < b.Seq
}

// findHash returns the event of all (other than self) whose hash is h.
func findHash(all []chainItem, h string, self chainItem) (chainItem, bool) {
	for _, e := range all {
		if e.Hash == h && h != "" && (e.Seq != self.Seq || e.Line != self.Line) {
			return e, true
		}
	}
	return chainItem{}, false
}

// classify says why it does not chain to head, the aggregate's previous
// event in the log, from the evidence of the whole aggregate.
func (c *chainCheck) classify(ctx context.Context, it chainItem, head *chainHead, ref aggRef) (Finding, error) {
	all, err := c.src.aggregate(ctx, it.Stream, ref, 0)
	if err != nil {
		return Finding{}, err
	}
	hashes := map[string]chainItem{}
	refs := map[string]int{}
	for _, e := range all {
		if e.Hash != "" {
			if _, dup := hashes[e.Hash]; !dup {
				hashes[e.Hash] = e
			}
		}
		if e.Prev != "" {
			refs[e.Prev]++
		}
	}
	pos := func(e chainItem) string {
		if e.Line > 0 {
			return fmt.Sprintf("#%d (line %d)", e.Seq, e.Line)
		}
		return fmt.Sprintf("#%d", e.Seq)
	}
	dangling := func() (string, bool) {
		for _, e := range all {
			if _, ok := hashes[e.Prev]; e.Prev != "" && !ok {
				return e.Prev, true
			}
		}
		return "", false
	}
	if first, ok := hashes[it.Hash]; ok && before(first, it) {
		return Finding{Kind: FindingDuplicated, Detail: fmt.Sprintf("it repeats %s: the same event is stored twice", pos(first))}, nil
	}
	if e, ok := hashes[it.Prev]; ok {
		if before(it, e) {
			return Finding{Kind: FindingReordered, Detail: fmt.Sprintf("it chains to %s, which the log holds after it", pos(e))}, nil
		}
		if refs[it.Hash] > 0 {
			return Finding{Kind: FindingReordered, Detail: fmt.Sprintf("it chains to %s, but #%d comes between: it was moved", pos(e), head.seq)}, nil
		}
		if h, ok := dangling(); ok {
			return Finding{Kind: FindingAltered, Detail: fmt.Sprintf("it chains to %s, whose original successor (hash %s) is gone: this is a changed copy of that event, re-appended here", pos(e), short(h))}, nil
		}
		return Finding{Kind: FindingReordered, Detail: fmt.Sprintf("it chains to %s, but #%d comes between", pos(e), head.seq)}, nil
	}
	if g, ok := c.gapBetween(head.seq, it.Seq); ok {
		detail := fmt.Sprintf("the event before it (hash %s) is missing: the stream lost #%d", short(it.Prev), g[0])
		if g[1] > g[0] {
			detail += fmt.Sprintf("-#%d", g[1])
		}
		for _, e := range all {
			if before(it, e) && e.Prev == head.hash && refs[e.Hash] == 0 {
				detail += fmt.Sprintf("; a changed copy of it stands at %s", pos(e))
				break
			}
		}
		return Finding{Kind: FindingRemoved, Detail: detail}, nil
	}
	return Finding{Kind: FindingAltered, Detail: fmt.Sprintf("its prev (%s) does not match %s, the event before it, which hashes to %s: one of the two was altered",
		short(it.Prev), pos(chainItem{Seq: head.seq, Line: head.line}), short(head.hash))}, nil
}

// short abbreviates a hash for messages.
func short(h string) string {
	h = strings.TrimPrefix(h, "sha256-")
	if len(h) > 16 {
		return h[:16]
	}
	return h
}

// itemOf is the chain item of a recorded event (its payload resolved).
func itemOf(rec events.Recorded, line int, hashable bool) chainItem {
	it := chainItem{Stream: rec.Stream, Subject: rec.Subject, Seq: rec.Seq, Line: line, ID: rec.ID, Prev: rec.Prev, Snapshot: rec.Type == taskqueue.Snapshot}
	if hashable {
		it.Hash = events.Hash(rec.Envelope)
	}
	return it
}
