package audit

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/trellis/trellis/events"
)

// An anchor also pins the newest event of each aggregate the log changed
// since the previous anchor: an aggregate whose newest events were
// removed (the stream refilled without them) breaks no chain, since
// nothing links to its last event, and may leave the stream's head where
// it was. Verify finds each anchored aggregate head still in the log.

// MaxAnchorAggregates bounds the aggregate heads one anchor records: the
// most recently changed ones; AggregatesOmitted counts the others.
const MaxAnchorAggregates = 2048

// MaxAnchorScan bounds the messages of one stream an anchor reads to find
// the aggregates changed since the previous anchor (the newest ones).
const MaxAnchorScan = 20_000

// AggregateHead is the newest event of one aggregate when an anchor was
// recorded.
type AggregateHead struct {
	Stream string `json:"stream"`
	// Subject is the event's subject (it names the aggregate).
	Subject string `json:"subject"`
	Seq     uint64 `json:"seq"`
	// Hash is the event's events.Hash.
	Hash string `json:"hash"`
}

// aggregatesDigest is the digest of an anchor's aggregate heads ("" when
// there are none, so anchors without them keep their MAC).
func aggregatesDigest(heads []AggregateHead) string {
	if len(heads) == 0 {
		return ""
	}
	h := sha256.New()
	for _, hd := range heads {
		fmt.Fprintf(h, "%s %s %d %s\n", hd.Stream, hd.Subject, hd.Seq, hd.Hash)
	}
	return "sha256-" + hex.EncodeToString(h.Sum(nil))
}

// changedAggregates reads, per stream, the messages stored after the
// previous anchor's last sequence (at most MaxAnchorScan of the newest)
// up to heads' last sequence, and returns the newest event of each
// aggregate they hold: the MaxAnchorAggregates most recent, and how many
// more there were.
func changedAggregates(ctx context.Context, store *events.Store, prev *Anchor, heads []AnchorHead) ([]AggregateHead, int, error) {
	after := map[string]uint64{}
	if prev != nil {
		for _, hd := range prev.Heads {
			after[hd.Stream] = hd.LastSeq
		}
	}
	var out []AggregateHead
	for _, hd := range heads {
		from := after[hd.Stream] + 1
		if hd.LastSeq >= MaxAnchorScan {
			from = max(from, hd.LastSeq-MaxAnchorScan+1)
		}
		if hd.LastSeq < from {
			continue
		}
		newest := map[string]int{} // aggregate key -> index in out
		err := store.Scan(ctx, hd.Stream, events.ScanRange{From: from, To: hd.LastSeq}, func(m events.Message) error {
			if m.Bad != nil || isTimerSubject(m.Subject) {
				return nil
			}
			ref, ok := aggregateOf(m.Subject)
			if !ok {
				return nil
			}
			h := AggregateHead{Stream: hd.Stream, Subject: m.Subject, Seq: m.Seq, Hash: events.Hash(m.Envelope)}
			if i, seen := newest[ref.key]; seen {
				out[i] = h
			} else {
				newest[ref.key] = len(out)
				out = append(out, h)
			}
			return nil
		})
		if err != nil {
			return nil, 0, fmt.Errorf("anchor aggregates of %s: %w", hd.Stream, err)
		}
	}
	omitted := 0
	if len(out) > MaxAnchorAggregates {
		slices.SortStableFunc(out, func(a, b AggregateHead) int { return cmp.Compare(b.Seq, a.Seq) })
		omitted, out = len(out)-MaxAnchorAggregates, out[:MaxAnchorAggregates]
	}
	slices.SortStableFunc(out, func(a, b AggregateHead) int {
		return cmp.Or(cmp.Compare(a.Stream, b.Stream), cmp.Compare(a.Seq, b.Seq))
	})
	return out, omitted, nil
}

// anchoredAggregate is an aggregate head to find, with the anchor that
// recorded it.
type anchoredAggregate struct {
	head AggregateHead
	at   time.Time
	what string
}

// newestAggregateHeads keeps, per aggregate, the newest head of the
// anchors given (oldest first): the walk's chain check then vouches for
// every earlier event of the aggregate.
func newestAggregateHeads(anchors []anchoredAggregate) []anchoredAggregate {
	idx := map[string]int{}
	var out []anchoredAggregate
	for _, a := range anchors {
		ref, ok := aggregateOf(a.head.Subject)
		if !ok {
			continue
		}
		key := a.head.Stream + " " + ref.key
		if i, seen := idx[key]; seen {
			out[i] = a
			continue
		}
		idx[key] = len(out)
		out = append(out, a)
	}
	return out
}

// headsToFind are the anchored aggregate heads verify has not met yet,
// by stream and sequence.
type headsToFind struct {
	bySeq map[string]map[uint64]anchoredAggregate
}

func newHeadsToFind(heads []anchoredAggregate) *headsToFind {
	h := &headsToFind{bySeq: map[string]map[uint64]anchoredAggregate{}}
	for _, a := range heads {
		m := h.bySeq[a.head.Stream]
		if m == nil {
			m = map[uint64]anchoredAggregate{}
			h.bySeq[a.head.Stream] = m
		}
		m[a.head.Seq] = a
	}
	return h
}

// met drops the head the walk found at m's position.
func (h *headsToFind) met(m events.Message) {
	a, ok := h.bySeq[m.Stream][m.Seq]
	if ok && m.Bad == nil && events.Hash(m.Envelope) == a.head.Hash {
		delete(h.bySeq[m.Stream], m.Seq)
	}
}

// left returns the heads the walk did not meet.
func (h *headsToFind) left() []anchoredAggregate {
	var out []anchoredAggregate
	for _, m := range h.bySeq {
		for _, a := range m {
			out = append(out, a)
		}
	}
	slices.SortFunc(out, func(a, b anchoredAggregate) int {
		return cmp.Or(cmp.Compare(a.head.Stream, b.head.Stream), cmp.Compare(a.head.Seq, b.head.Seq))
	})
	return out
}

// checkAggregateHeads finds each anchored aggregate head in the log: at
// its sequence, or (a stream refilled) anywhere among its aggregate's
// events. One it does not find is a removal naming the aggregate.
func checkAggregateHeads(ctx context.Context, store *events.Store, heads []anchoredAggregate, pruned map[string]*events.SeqRanges) ([]Finding, error) {
	var out []Finding
	infos := map[string]*jetstream.StreamInfo{}
	for _, a := range heads {
		hd := a.head
		info, ok := infos[hd.Stream]
		if !ok {
			i, err := store.StreamInfo(ctx, hd.Stream)
			if err != nil && !errors.Is(err, jetstream.ErrStreamNotFound) {
				return nil, err
			}
			info, infos[hd.Stream] = i, i
		}
		if info == nil {
			continue // a missing stream: reported by the walk
		}
		if hd.Seq < info.State.FirstSeq && limitsOf(info.Config) != "" {
			continue // expired under the stream's retention limits
		}
		if pruned[hd.Stream].Covers(hd.Seq, hd.Seq) {
			continue // pruned: a prune record accounts for it (its archive holds it)
		}
		if hd.Seq > 0 && hd.Seq <= info.State.LastSeq {
			rec, err := store.Get(ctx, hd.Stream, hd.Seq)
			if err == nil && events.Hash(rec.Envelope) == hd.Hash {
				continue
			}
			if err != nil && !errors.Is(err, events.ErrNotFound) && !errors.Is(err, events.ErrBadEvent) && !errors.Is(err, events.ErrBlob) {
				return nil, err
			}
		}
		ref, _ := aggregateOf(hd.Subject)
		found := false
		err := store.Scan(ctx, hd.Stream, events.ScanRange{Filter: ref.read}, func(m events.Message) error {
			if m.Bad == nil && events.Hash(m.Envelope) == hd.Hash {
				found = true
				return events.ErrStopScan
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		if !found {
			out = append(out, Finding{Kind: FindingRemoved, Stream: hd.Stream, Seq: hd.Seq, Subject: hd.Subject, Aggregate: ref.name,
				Detail: fmt.Sprintf("%s of %s recorded this aggregate's newest event then at #%d (hash %s); the log no longer holds it: the aggregate's newest events were removed",
					a.what, a.at.UTC().Format(time.RFC3339), hd.Seq, short(hd.Hash))})
		}
	}
	return out, nil
}
