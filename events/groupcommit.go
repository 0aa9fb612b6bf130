package events

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Group commit.
//
// With fsync on every write, JetStream stores the messages of one stream one
// synced write at a time, so single appends top out at about one per fsync.
// An atomic batch (AllowAtomicPublish) is synced once at its commit, but on
// a one-replica file stream it carries a fixed cost (the server stages it in
// a file store of its own), so it pays off only from a dozen events or so.
//
// Each stream therefore has one committer per process. An append goes out
// at once as a single write while fewer than MaxSingles are in flight (a
// lone append keeps the latency of one write); beyond that it waits in the
// committer's queue, and as soon as BatchMin or more wait (one event per
// aggregate, bounded in count and bytes) they go as one atomic batch, up
// to MaxBatches batches in flight. While a batch is in flight no single
// write starts: the server stores the stream's writes one after the other,
// so a single sent then only delays the batch and takes an event from the
// next one; what arrives meanwhile waits and goes with the next batch (or,
// too few for one, one by one once the batch is stored). Waiting appends
// that are too few for a batch go one by one as single writes finish.
//
// Every event keeps its own Nats-Msg-Id (its ULID) and its own check of the
// aggregate's last sequence. JetStream refuses a whole batch when one of its
// events fails its check or repeats a stored message id; the committer then
// sends that group's events one by one, so each caller gets its own
// outcome: the stale event alone fails with ErrWrongLastSequence, an event
// an earlier (unacknowledged) attempt stored is reported as a duplicate
// with its original sequence, and the rest are stored.

// Pending is one event to append.
type Pending struct {
	// Subject is the event's subject (trellis.<domain>.<aggregate>...).
	Subject string
	// Envelope is the event.
	Envelope Envelope
	// Expect is the concurrency check against the aggregate's last event.
	Expect Expect
	// MsgID overrides the Nats-Msg-Id (default Envelope.ID).
	MsgID string
	// Header carries extra message headers (a summary for headers-only
	// readers).
	Header nats.Header
}

// AppendResult is the outcome of one Pending.
type AppendResult struct {
	Appended
	// Err is nil when the event is stored (or was stored before: see
	// Appended.Duplicate); it wraps ErrWrongLastSequence when the check
	// failed and ErrPayloadTooLarge when the event cannot fit a message.
	Err error
}

// AppendAll appends several events, each with its own check and outcome,
// in one group when the stream's committer can: the events of one call are
// queued together, so a bulk operation (adding many tasks) is committed as
// few atomic batches. Events of one aggregate should not share a call: an
// event can only expect the last sequence before the call, so the second
// one is stale. The events of one stream are stored in the order of ps
// (each is sent once the one before it is settled, or with it in a
// batch). Results are in the order of ps.
func (s *Store) AppendAll(ctx context.Context, ps []Pending) []AppendResult {
	out := make([]AppendResult, len(ps))
	if len(ps) == 0 {
		return out
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, s.cfg.AppendTimeout)
		defer cancel()
	}
	byStream := map[string][]*request{}
	reqs := make([]*request, len(ps))
	for i, p := range ps {
		r, err := s.newRequest(ctx, p)
		if err != nil {
			out[i].Err = err
			continue
		}
		reqs[i] = r
		if prev := byStream[r.stream]; len(prev) > 0 {
			r.after = prev[len(prev)-1]
		}
		byStream[r.stream] = append(byStream[r.stream], r)
	}
	for stream, rs := range byStream {
		s.streamTraits(stream) // learn the stream before the committer needs it
		s.committer(stream).enqueue(rs)
	}
	for i, r := range reqs {
		if r == nil {
			continue
		}
		out[i] = r.wait(ctx, s)
	}
	return out
}

// request is one append waiting for, or in, a commit.
type request struct {
	ctx    context.Context
	p      Pending
	stream string
	body   []byte
	msgID  string
	done   chan struct{}
	res    AppendResult
	// after is the request queued before this one by the same AppendAll
	// call on the same stream: this one is sent only with it or once it
	// is settled, so a call's events are stored in its order.
	after *request
	// taken and settled (committed or withdrawn) are guarded by the
	// committer's mutex.
	taken, settled bool
	// inDoubt marks a request that was sent before and whose answer was
	// lost: it may be stored, or being stored, already.
	inDoubt bool
}

func (s *Store) newRequest(ctx context.Context, p Pending) (*request, error) {
	spec, err := StreamFor(p.Subject)
	if err != nil {
		return nil, fmt.Errorf("append %s: %w", p.Subject, err)
	}
	body, err := Encode(p.Envelope)
	if err != nil {
		return nil, fmt.Errorf("encode event %s: %w", p.Envelope.Type, err)
	}
	if s.tooLarge(p, body) {
		// Too large for one message: the payload goes to the blob bucket
		// and the event refers to it.
		env, err := s.offload(ctx, p.Envelope)
		if err != nil {
			return nil, fmt.Errorf("append %s: %w", p.Subject, err)
		}
		p.Envelope = env
		if body, err = Encode(env); err != nil {
			return nil, fmt.Errorf("encode event %s: %w", env.Type, err)
		}
		if s.tooLarge(p, body) {
			return nil, fmt.Errorf("append %s: %d bytes without its payload: %w", p.Subject, len(body), ErrPayloadTooLarge)
		}
	}
	msgID := p.MsgID
	if msgID == "" {
		msgID = p.Envelope.ID
	}
	return &request{ctx: ctx, p: p, stream: spec.Name, body: body, msgID: msgID, done: make(chan struct{})}, nil
}

// tooLarge reports whether an event's message would exceed the server's
// maximum message size.
func (s *Store) tooLarge(p Pending, body []byte) bool {
	size := len(body) + len(p.Subject) + headerAllowance
	for k, vs := range p.Header {
		for _, v := range vs {
			size += len(k) + len(v) + 4
		}
	}
	max := s.nc.MaxPayload()
	return max > 0 && int64(size) > max
}

// headerAllowance is the room left in a message for its headers (message
// id, concurrency check, batch headers, summaries).
const headerAllowance = 512

// message builds the request's message: body, extra headers, message id
// and the aggregate check.
func (r *request) message() *nats.Msg {
	msg := &nats.Msg{Subject: r.p.Subject, Data: r.body, Header: nats.Header{}}
	for k, vs := range r.p.Header {
		for _, v := range vs {
			msg.Header.Add(k, v)
		}
	}
	msg.Header.Set(nats.MsgIdHdr, r.msgID)
	if r.p.Expect.None {
		return msg
	}
	msg.Header.Set(nats.ExpectedLastSubjSeqHdr, strconv.FormatUint(r.p.Expect.LastSeq, 10))
	if r.p.Expect.Filter != "" {
		msg.Header.Set(expectedLastSubjSeqSubjHdr, r.p.Expect.Filter)
	}
	return msg
}

// expectedLastSubjSeqSubjHdr names the subject filter the expected last
// subject sequence is checked against (the whole aggregate).
const expectedLastSubjSeqSubjHdr = "Nats-Expected-Last-Subject-Sequence-Subject"

// wait returns the request's outcome. When ctx ends before the committer
// took the request, the request is withdrawn and never sent.
func (r *request) wait(ctx context.Context, s *Store) AppendResult {
	select {
	case <-r.done:
		return r.res
	case <-ctx.Done():
	}
	if s.committer(r.stream).withdraw(r) {
		return AppendResult{Err: fmt.Errorf("append %s: %w", r.p.Subject, ctx.Err())}
	}
	<-r.done // in flight: its commit is bounded by the request timeouts
	return r.res
}

func (r *request) finish(res AppendResult) {
	r.res = res
	close(r.done)
}

// GroupCommitStats counts how a store's appends were committed.
type GroupCommitStats struct {
	// Batches is the number of atomic batches committed.
	Batches uint64 `json:"batches"`
	// BatchedEvents is the number of events they held.
	BatchedEvents uint64 `json:"batched_events"`
	// Singles is the number of events sent one by one.
	Singles uint64 `json:"singles"`
	// Fallbacks is the number of batches refused (a stale event, a
	// repeated message id, a lost acknowledgement) whose events were then
	// sent one by one.
	Fallbacks uint64 `json:"fallbacks"`
}

type commitStats struct {
	batches, batchedEvents, singles, fallbacks atomic.Uint64
}

// GroupCommitStats returns the store's group-commit counters since it was
// created.
func (s *Store) GroupCommitStats() GroupCommitStats {
	return GroupCommitStats{
		Batches:       s.stats.batches.Load(),
		BatchedEvents: s.stats.batchedEvents.Load(),
		Singles:       s.stats.singles.Load(),
		Fallbacks:     s.stats.fallbacks.Load(),
	}
}

// committer gathers one stream's appends and commits them.
type committer struct {
	s      *Store
	stream string

	mu       sync.Mutex
	queue    []*request
	singles  int             // single appends in flight
	batches  int             // batches in flight
	inflight map[string]bool // aggregates and message ids with an event in flight
}

func (s *Store) committer(stream string) *committer {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.committers[stream]
	if !ok {
		c = &committer{s: s, stream: stream, inflight: map[string]bool{}}
		s.committers[stream] = c
	}
	return c
}

// enqueue adds requests and starts what can start.
func (c *committer) enqueue(rs []*request) {
	c.mu.Lock()
	c.queue = append(c.queue, rs...)
	c.pumpLocked()
	c.mu.Unlock()
}

// withdraw removes a request that was not taken yet.
func (c *committer) withdraw(r *request) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if r.taken {
		return false
	}
	r.settled = true
	for i, q := range c.queue {
		if q == r {
			c.queue = append(c.queue[:i], c.queue[i+1:]...)
			break
		}
	}
	return true
}

// pumpLocked starts commits for waiting requests: a batch when enough
// wait, else single appends while fewer than MaxSingles and no batch are
// in flight (more would only queue at the server, which stores one message
// at a time); the rest wait for a commit to finish. c.mu is held.
func (c *committer) pumpLocked() {
	for len(c.queue) > 0 {
		if min, ok := c.s.batchMin(c.stream); ok && c.batches < c.s.cfg.MaxBatches && len(c.queue) >= min {
			if picked := c.pickLocked(c.s.cfg.BatchMax); len(picked) >= min {
				c.batches++
				go c.commitBatch(c.takeLocked(picked))
				continue
			}
		}
		if c.singles >= c.s.cfg.MaxSingles || c.batches > 0 {
			return
		}
		group := c.takeLocked(c.pickLocked(1))
		if len(group) == 0 {
			return // every waiting event's aggregate has one in flight
		}
		c.singles++
		go c.commitSingle(group[0])
	}
}

// aggregateKey identifies the aggregate an event checks against.
func (r *request) aggregateKey() string {
	if r.p.Expect.Filter != "" {
		return r.p.Expect.Filter
	}
	return r.p.Subject
}

// doneLocked forgets a finished request's aggregate and message id.
func (c *committer) doneLocked(r *request) {
	r.settled = true
	delete(c.inflight, r.aggregateKey())
	delete(c.inflight, "id:"+r.msgID)
}

// takeLocked removes the waiting requests at the picked queue positions
// (from pickLocked) and marks them in flight.
func (c *committer) takeLocked(picked []int) []*request {
	group := make([]*request, 0, len(picked))
	rest := c.queue[:0:0]
	j := 0
	for i, r := range c.queue {
		if j < len(picked) && picked[j] == i {
			r.taken = true
			c.inflight[r.aggregateKey()] = true
			c.inflight["id:"+r.msgID] = true
			group = append(group, r)
			j++
			continue
		}
		rest = append(rest, r)
	}
	c.queue = rest
	return group
}

// pickLocked returns the queue positions of the next group: waiting
// requests in order, each after the previous event of its AppendAll call
// (settled, or earlier in the group), one per aggregate and per message id (a second one
// would fail its check inside the batch and refuse it whole), none of an
// aggregate or message id with an event in flight (it waits its turn, so
// events of one aggregate are stored in the order they were queued, and
// of two events with one id the first is stored), within the batch
// bounds.
func (c *committer) pickLocked(max int) []int {
	var picked []int
	filters, ids := map[string]bool{}, map[string]bool{}
	in := map[*request]bool{}
	bytes := 0
	for i, r := range c.queue {
		if len(picked) >= max {
			break
		}
		key := r.aggregateKey()
		if r.after != nil && !r.after.settled && !in[r.after] {
			continue // after its call's previous event, or in the same group
		}
		if r.msgID != "" && ids[r.msgID] && !filters[key] {
			// A repeat of a message id of this group: stored as a
			// duplicate of it (or sent after it), so it holds no place
			// in the order.
			in[r] = true
			continue
		}
		if filters[key] || c.inflight[key] || ids[r.msgID] || c.inflight["id:"+r.msgID] || (len(picked) > 0 && bytes+len(r.body) > c.s.cfg.BatchMaxBytes) {
			continue
		}
		filters[key], ids[r.msgID], in[r] = true, true, true
		bytes += len(r.body)
		picked = append(picked, i)
	}
	return picked
}

// commitSingle sends one event on its own.
func (c *committer) commitSingle(r *request) {
	c.s.stats.singles.Add(1)
	a, err := c.s.publishOne(r.ctx, r)
	r.finish(AppendResult{Appended: a, Err: err})
	c.mu.Lock()
	c.singles--
	c.doneLocked(r)
	c.pumpLocked()
	c.mu.Unlock()
}

// commitBatch commits group as one atomic batch. When the server refuses
// it (a stale event, a stored message id) or its answer is lost, the
// events are sent one by one, which finds out for each whether it is
// stored.
func (c *committer) commitBatch(group []*request) {
	defer func() {
		c.mu.Lock()
		c.batches--
		for _, r := range group {
			c.doneLocked(r)
		}
		c.pumpLocked()
		c.mu.Unlock()
	}()
	msgs := make([]*nats.Msg, len(group))
	for i, r := range group {
		msgs[i] = r.message()
	}
	ctx, cancel := c.s.attemptContext(context.Background(), c.stream)
	last, err := PublishBatch(ctx, c.s.nc, msgs)
	err = attemptErr(ctx, err)
	cancel()
	if err != nil {
		c.s.stats.fallbacks.Add(1)
		c.s.stats.singles.Add(uint64(len(group)))
		// A batch whose answer was lost (not one the server refused) may
		// be committing while its events are sent again.
		lost := !errors.Is(err, ErrBatchRefused)
		inGroup := make(map[*request]bool, len(group))
		for _, r := range group {
			inGroup[r] = true
		}
		var wg sync.WaitGroup
		for _, r := range group {
			r.inDoubt = lost
			wg.Add(1)
			go func() {
				defer wg.Done()
				if r.after != nil && inGroup[r.after] {
					// One call's events keep their order when sent
					// again: this one goes once the one before it is
					// settled.
					<-r.after.done
				}
				a, err := c.s.publishOne(r.ctx, r)
				r.finish(AppendResult{Appended: a, Err: err})
			}()
		}
		wg.Wait()
		return
	}
	first := last - uint64(len(group)) + 1
	c.s.stats.batches.Add(1)
	c.s.stats.batchedEvents.Add(uint64(len(group)))
	for j, r := range group {
		r.finish(AppendResult{Appended: Appended{Seq: first + uint64(j)}})
	}
}

// batchAck is the server's answer to a batch commit.
type batchAck struct {
	Stream string `json:"stream"`
	Seq    uint64 `json:"seq"`
	Batch  string `json:"batch"`
	Count  int    `json:"count"`
	Error  *struct {
		Code        int    `json:"code"`
		ErrCode     int    `json:"err_code"`
		Description string `json:"description"`
	} `json:"error"`
}

// ErrBatchRefused reports an atomic batch the server did not store.
var ErrBatchRefused = errors.New("atomic batch refused")

// BatchError is a batch the server refused, with its reason.
type BatchError struct {
	// ErrCode is the JetStream API error code (10071: a wrong last
	// sequence; 10201: a message id already stored).
	ErrCode     int
	Description string
}

func (e *BatchError) Error() string {
	return fmt.Sprintf("%v: %s (error %d)", ErrBatchRefused, e.Description, e.ErrCode)
}

// Unwrap makes a BatchError match ErrBatchRefused.
func (e *BatchError) Unwrap() error { return ErrBatchRefused }

// PublishBatch publishes msgs to one stream as one JetStream atomic batch
// (nats-server 2.12+, a stream with AllowAtomicPublish) and returns the
// sequence of the last message; the batch's messages are stored at
// consecutive sequences ending there. Every message keeps its own headers
// (message id, expected sequences). The messages before the last are sent
// without waiting; the commit waits for the server's answer. A batch the
// server refuses (one failed check, a message id it holds, an incomplete
// batch) is refused whole and wraps ErrBatchRefused with the server's
// reason; a missing answer (ctx ends) leaves unknown whether it was
// stored.
func PublishBatch(ctx context.Context, nc *nats.Conn, msgs []*nats.Msg) (uint64, error) {
	if len(msgs) == 0 {
		return 0, fmt.Errorf("%w: empty batch", ErrBatchRefused)
	}
	id := NewID(time.Now())
	for i, m := range msgs {
		msg := &nats.Msg{Subject: m.Subject, Data: m.Data, Header: nats.Header{}}
		for k, vs := range m.Header {
			msg.Header[k] = append([]string(nil), vs...)
		}
		msg.Header.Set(batchIDHdr, id)
		msg.Header.Set(batchSeqHdr, strconv.Itoa(i+1))
		if i < len(msgs)-1 {
			if err := nc.PublishMsg(msg); err != nil {
				return 0, fmt.Errorf("batch message %d: %w", i+1, err)
			}
			continue
		}
		msg.Header.Set(batchCommitHdr, "1")
		reply, err := nc.RequestMsgWithContext(ctx, msg)
		if err != nil {
			return 0, fmt.Errorf("batch commit: %w", err)
		}
		var ack batchAck
		if err := json.Unmarshal(reply.Data, &ack); err != nil {
			return 0, fmt.Errorf("batch commit: bad answer %q: %w", reply.Data, err)
		}
		if ack.Error != nil {
			return 0, &BatchError{ErrCode: ack.Error.ErrCode, Description: ack.Error.Description}
		}
		if ack.Count != len(msgs) || ack.Seq < uint64(len(msgs)) {
			return 0, fmt.Errorf("%w: answer for %d messages at #%d, sent %d", ErrBatchRefused, ack.Count, ack.Seq, len(msgs))
		}
		return ack.Seq, nil
	}
	return 0, nil // unreachable: the last message returns
}

// The atomic batch headers (nats-server 2.12+).
const (
	batchIDHdr     = "Nats-Batch-Id"
	batchSeqHdr    = "Nats-Batch-Sequence"
	batchCommitHdr = "Nats-Batch-Commit"
)

// batchMin returns the fewest waiting events that go to stream as one
// atomic batch, and whether batches go to it at all (batching on, the
// stream known to take atomic batches). It reads only what the store has
// learnt of the stream (AppendAll learns it before enqueueing), so the
// committer never waits on the server under its lock.
func (s *Store) batchMin(stream string) (int, bool) {
	if s.cfg.BatchMin < 0 {
		return 0, false
	}
	s.mu.Lock()
	tr, ok := s.traits[stream]
	s.mu.Unlock()
	if !ok || !tr.atomic {
		return 0, false
	}
	if s.cfg.BatchMin > 0 {
		return max(s.cfg.BatchMin, 2), true
	}
	return DefaultBatchMin(tr.replicas), true
}

// DefaultBatchMin is the batch minimum for a stream with the given
// replicas: measured with `trellis bench append` on a one-replica file
// stream, an atomic batch beats the same events sent one by one from about
// a dozen events; replicated streams stage batches in memory, so two
// already share a write.
func DefaultBatchMin(replicas int) int {
	if replicas > 1 {
		return 2
	}
	return 12
}

// streamTraits returns what the group commit knows of stream, asking the
// server once (a store that did not create the streams).
func (s *Store) streamTraits(stream string) (streamTraits, bool) {
	s.mu.Lock()
	tr, ok := s.traits[stream]
	s.mu.Unlock()
	if ok {
		return tr, true
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.RequestTimeout)
	defer cancel()
	st, err := s.js.Stream(ctx, stream)
	if err != nil {
		return streamTraits{}, false
	}
	return s.learn(stream, st.CachedInfo().Config), true
}

func (s *Store) learn(stream string, cfg jetstream.StreamConfig) streamTraits {
	tr := streamTraits{atomic: cfg.AllowAtomicPublish, replicas: cfg.Replicas}
	s.mu.Lock()
	s.traits[stream] = tr
	s.mu.Unlock()
	return tr
}
