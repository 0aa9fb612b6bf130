package retention

import (
	"context"
	"errors"
	"os"
	"time"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/command"
	"github.com/trellis/trellis/events"
)

// recordOther ends a batch pruned from a stream other than the queue's
// (workflow runs, agent tasks; what names them in errors): it signs p,
// appends it as the retention log's next record (checked against the
// log's last sequence: a prune that recorded meanwhile makes this one a
// conflict, and its archive, at archivePath, is removed), then removes
// the sequences p names on p.Stream. It returns the record's sequence and
// the number of sequences p names. Once the record is appended, a failed
// removal is left to the next prune, which finishes it.
func recordOther(ctx context.Context, store *events.Store, log *retentionLog, opts Options, at time.Time, recordID, archivePath string,
	p events.PrunedPayload, what string) (uint64, int, error) {
	p = p.Sign(opts.Key)
	rec, err := events.NewEnvelope(at, events.PrunedType, events.RetentionAggregate, opts.Actor, events.PrunedSchema, p)
	if err != nil {
		return 0, 0, err
	}
	rec.ID, rec.Prev = recordID, log.lastHash
	ack, err := store.Append(ctx, events.RetentionSubjectPrefix+events.PrunedType, rec, events.Expect{Filter: events.RetentionFilter, LastSeq: log.lastSeq}, "")
	if err != nil {
		if errors.Is(err, events.ErrWrongLastSequence) {
			_ = os.Remove(archivePath)
			return 0, 0, trellis.Errorf(trellis.CodeConflict, "another prune ran while this one did (the retention log moved on): run it again")
		}
		return 0, 0, command.StoreError("prune: append the prune record", err)
	}
	if opts.AfterRecord != nil {
		opts.AfterRecord()
	}
	log.recorded(ack.Seq, events.Hash(rec), &p)
	for _, r := range p.Removed {
		log.otherPruned(p.Stream).Add(r[0], r[1])
	}
	if _, err := log.finish(ctx, nil); err != nil {
		return 0, 0, command.StoreError("prune: remove the pruned "+what+" (the record is appended: the next prune finishes it)", err)
	}
	seqs := 0
	for _, r := range p.Removed {
		seqs += int(r[1] - r[0] + 1)
	}
	return ack.Seq, seqs, nil
}
