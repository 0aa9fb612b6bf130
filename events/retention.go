package events

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
}
