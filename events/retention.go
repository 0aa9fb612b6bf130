package events

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
)

// The retention log: one aggregate on the queue stream whose events record
// what `trellis prune` removed from the log (see retention/ and
// docs/retention.md). audit verify reads it to tell a prune's deleted
// sequences from a removal.
const (
	// RetentionSubjectPrefix is the subject of the retention aggregate
	// without its event type: trellis.queue._retention._prune.<type>.
	RetentionSubjectPrefix = "trellis.queue._retention._prune."
	// RetentionFilter is the subject filter (and concurrency scope) of the
	// retention aggregate.
	RetentionFilter = RetentionSubjectPrefix + ">"
	// RetentionAggregate is the retention aggregate's id.
	RetentionAggregate = "_prune"
	// PrunedType is the type of a prune record.
	PrunedType = "pruned"
	// PrunedSchema is the schema version of PrunedPayload.
	PrunedSchema = 1
)

// PrunedPayload is the payload of a prune record: the aggregates a prune
// removed from one stream, every sequence it removed (their events, their
// fired timers, and the tombstones appended with this record), and the
// archive that holds the removed events.
type PrunedPayload struct {
	// Stream is the stream the sequences belong to.
	Stream string `json:"stream"`
	// Cut is the prune's cut: every removed event was stored before it.
	Cut string `json:"cut"`
	// Archive is the archive file's name (in the prune's archive
	// directory), Digest its trailer's digest, Events the events it holds.
	Archive string `json:"archive"`
	Digest  string `json:"digest"`
	Events  int    `json:"events"`
	// Removed are the removed sequence ranges, in order, inclusive, not
	// counting the tombstones.
	Removed [][2]uint64 `json:"removed"`
	// Tombstones is how many tombstones follow this record in its atomic
	// batch (one per aggregate, at the record's sequence +1 .. +n); they
	// are removed with their aggregates.
	Tombstones int `json:"tombstones"`
	// Aggregates are the removed aggregates (queue tasks: "<queue>/<task id>").
	Aggregates []string `json:"aggregates"`
	// Continued are the open aggregates whose events before a snapshot
	// the prune removed (counted in Removed): each continues in the live
	// log from that snapshot, chained to its last archived event.
	Continued []Continuation `json:"continued,omitempty"`
	// MAC is the record's HMAC-SHA256 (hex) under the server's audit key
	// (see audit.AnchorKey), over the payload without it: NATS credentials
	// alone cannot make a record that verify, given the key, trusts to
	// excuse removed sequences. Empty when the prune had no key.
	MAC string `json:"mac,omitempty"`
}

// Continuation is an open aggregate a prune cut at a snapshot: the
// snapshot is the first event the live log holds of it.
type Continuation struct {
	// Aggregate is the aggregate's subject filter.
	Aggregate string `json:"aggregate"`
	// Seq is the snapshot's sequence and Hash its events.Hash.
	Seq  uint64 `json:"seq"`
	Hash string `json:"hash"`
	// Prev is the snapshot's prev: the hash of the aggregate's last
	// event in the archive.
	Prev string `json:"prev"`
}

// Sign returns p with its MAC under key (p unchanged when key is empty).
func (p PrunedPayload) Sign(key []byte) PrunedPayload {
	if len(key) == 0 {
		return p
	}
	p.MAC = p.mac(key)
	return p
}

// PrunedStream reports whether prunes remove events from stream: the
// queue's, the workflow runs' and the agent tasks'. A record of any
// other stream was not made by a prune: neither a prune nor verify acts
// on it.
func PrunedStream(stream string) bool {
	return stream == StreamQueue || stream == StreamWorkflows || stream == StreamTasks
}

// Signed reports whether p carries a valid MAC under key.
func (p PrunedPayload) Signed(key []byte) bool {
	return len(key) > 0 && p.MAC != "" && hmac.Equal([]byte(p.MAC), []byte(p.mac(key)))
}

func (p PrunedPayload) mac(key []byte) string {
	p.MAC = ""
	body, _ := json.Marshal(p) // a struct of strings, ints and slices: never fails
	m := hmac.New(sha256.New, key)
	m.Write([]byte("trellis prune record\x00"))
	m.Write(body)
	return hex.EncodeToString(m.Sum(nil))
}

// SeqRanges is a set of stream sequences as sorted, disjoint, inclusive
// ranges (the sequences prune records account for).
type SeqRanges struct{ r [][2]uint64 }

// Add puts from..to into the set.
func (s *SeqRanges) Add(from, to uint64) {
	if to < from {
		return
	}
	out := make([][2]uint64, 0, len(s.r)+1)
	i := 0
	for ; i < len(s.r) && s.r[i][1]+1 < from; i++ {
		out = append(out, s.r[i])
	}
	for ; i < len(s.r) && s.r[i][0] <= to+1; i++ {
		from, to = min(from, s.r[i][0]), max(to, s.r[i][1])
	}
	out = append(out, [2]uint64{from, to})
	s.r = append(out, s.r[i:]...)
}

// Ranges returns the set's ranges in order.
func (s *SeqRanges) Ranges() [][2]uint64 { return s.r }

// Covers reports whether every sequence of from..to is in the set.
func (s *SeqRanges) Covers(from, to uint64) bool {
	return len(s.Minus(from, to)) == 0
}

// Minus returns the parts of from..to not in the set, in order (a nil
// set is empty).
func (s *SeqRanges) Minus(from, to uint64) [][2]uint64 {
	if s == nil { // the empty set
		return [][2]uint64{{from, to}}
	}
	var out [][2]uint64
	at := from
	for _, r := range s.r {
		if at > to {
			break
		}
		if r[1] < at {
			continue
		}
		if r[0] > to {
			break
		}
		if r[0] > at {
			out = append(out, [2]uint64{at, r[0] - 1})
		}
		at = r[1] + 1
	}
	if at <= to && at >= from {
		out = append(out, [2]uint64{at, to})
	}
	return out
}
