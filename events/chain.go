package events

import "context"

// AppendChain appends several events of ONE aggregate, all or nothing, as
// one atomic batch: the first carries the aggregate's check (ps[0].Expect)
// and the rest follow it (their Expect is ignored), since nothing can come
// between the events of an atomic batch. It returns each event's sequence.
// A stale check fails the whole chain with ErrWrongLastSequence; when the
// acknowledgement is lost, the chain is looked up by its first event's id
// and reported as stored (Duplicate) if it is there; a message id the
// stream holds fails it with ErrDuplicateMsgID. A single event is an
// ordinary checked append.
func (s *Store) AppendChain(ctx context.Context, ps []Pending) ([]Appended, error) {
	if len(ps) > 1 {
		chain := make([]Pending, len(ps))
		copy(chain, ps)
		for i := 1; i < len(chain); i++ {
			chain[i].Expect = Expect{None: true}
		}
		ps = chain
	}
	return s.appendBatch(ctx, ps, "a chain")
}

// streamOf names the stream that holds subject ("" for none).
func streamOf(subject string) string {
	spec, err := StreamFor(subject)
	if err != nil {
		return ""
	}
	return spec.Name
}
