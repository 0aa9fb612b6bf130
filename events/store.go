package events

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// ErrWrongLastSequence reports that an append's expected last sequence for
// its aggregate was stale: someone else appended first. The caller reloads
// and decides again, or reports a conflict.
var ErrWrongLastSequence = errors.New("aggregate changed concurrently (wrong last sequence)")

// ErrPayloadTooLarge reports an event bigger than the NATS server accepts
// in one message.
var ErrPayloadTooLarge = errors.New("event is larger than the server's maximum message size")

// ErrNotFound reports an aggregate or message with no events.
var ErrNotFound = errors.New("no events")

// StoreConfig configures the Store. The zero value is usable.
type StoreConfig struct {
	// Replicas is the number of stream replicas an operator asks for
	// (trellis serve --replicas): Ensure creates missing streams with it
	// and changes existing ones to it. Zero asks for nothing: Ensure keeps
	// every existing stream's replicas as they are (a client never
	// changes a cluster's durability) and creates missing streams with
	// the replicas of the existing Trellis streams, or 1.
	Replicas int
	// DuplicateWindow is how long JetStream remembers message ids for
	// de-duplication (default 2 minutes). Idempotency keys are honoured
	// within this window.
	DuplicateWindow time.Duration
	// RequestTimeout bounds each JetStream API call (default 5 s).
	RequestTimeout time.Duration
	// AttemptTimeout bounds one attempt of an append (default 2 s, at
	// most RequestTimeout). An attempt met by silence — sent to a stream
	// leader just cut off or paused — is sent again after it (its message
	// ids make a repeat of a stored attempt harmless), so an append goes
	// on within AttemptTimeout of a new leader's election instead of
	// RequestTimeout — at once when the store hears JetStream's advisory
	// of the election (see leaderWatch).
	AttemptTimeout time.Duration
	// AppendTimeout bounds an append and its retries when the caller's
	// context has no deadline (default 30 s).
	AppendTimeout time.Duration
	// BatchMin is the smallest number of appends waiting on one stream
	// that are committed together as one atomic batch, synced once (see
	// the group commit in groupcommit.go); fewer are sent one by one,
	// concurrently. Default (0) per stream: 12 with one replica (a batch
	// has a fixed cost there: the server stages it on disk), 2 with more
	// (staged in memory). Negative turns batching off.
	BatchMin int
	// BatchMax bounds the events of one batch (default 256; the server
	// takes at most 1000).
	BatchMax int
	// BatchMaxBytes bounds the bytes of one batch (default 8 MiB).
	BatchMaxBytes int
	// MaxPayloadBytes bounds an event's payload (default 64 MiB). A
	// payload too large for one message is stored in the blob bucket (see
	// blob.go).
	MaxPayloadBytes int64
	// MaxSingles bounds the single appends in flight per stream before
	// further appends wait to be batched (default 4: the server stores a
	// stream's messages one at a time, so more in flight only queue
	// there).
	MaxSingles int
	// MaxBatches bounds the atomic batches in flight per stream (default
	// 1: appends arriving meanwhile make the next batch larger).
	MaxBatches int
}

func (c StoreConfig) withDefaults() StoreConfig {
	if c.Replicas < 0 {
		c.Replicas = 0
	}
	if c.DuplicateWindow <= 0 {
		c.DuplicateWindow = 2 * time.Minute
	}
	if c.RequestTimeout <= 0 {
		c.RequestTimeout = 5 * time.Second
	}
	if c.AttemptTimeout <= 0 {
		c.AttemptTimeout = 2 * time.Second
	}
	c.AttemptTimeout = min(c.AttemptTimeout, c.RequestTimeout)
	if c.AppendTimeout <= 0 {
		c.AppendTimeout = 30 * time.Second
	}
	if c.BatchMax <= 0 {
		c.BatchMax = 256
	}
	c.BatchMax = min(c.BatchMax, 1000)
	if c.BatchMaxBytes <= 0 {
		c.BatchMaxBytes = 8 << 20
	}
	if c.MaxPayloadBytes <= 0 {
		c.MaxPayloadBytes = 64 << 20
	}
	if c.MaxSingles <= 0 {
		c.MaxSingles = 4
	}
	if c.MaxBatches <= 0 {
		c.MaxBatches = 1
	}
	return c
}

// Store is the event log on JetStream: checked appends, aggregate loads and
// stream reads. It is safe for concurrent use.
type Store struct {
	nc    *nats.Conn
	js    jetstream.JetStream
	cfg   StoreConfig
	stats commitStats

	mu         sync.Mutex
	committers map[string]*committer
	traits     map[string]streamTraits
	bucket     jetstream.ObjectStore  // the blob bucket, once known
	heads      map[string]*headReader // gathered last-event reads (see LastSeqOf)
	leaders    leaderWatch
}

// streamTraits is what the group commit needs to know of a stream.
type streamTraits struct {
	atomic   bool // takes atomic batches
	replicas int
}

// NewStore wraps a NATS connection. Call Ensure once to create the streams.
func NewStore(nc *nats.Conn, cfg StoreConfig) (*Store, error) {
	cfg = cfg.withDefaults()
	js, err := jetstream.New(nc, jetstream.WithDefaultTimeout(cfg.RequestTimeout))
	if err != nil {
		return nil, fmt.Errorf("jetstream context: %w", err)
	}
	return &Store{nc: nc, js: js, cfg: cfg, committers: map[string]*committer{}, traits: map[string]streamTraits{}}, nil
}

// Close releases the subscriptions the store holds on its connection (the
// stream leader elections it hears, see leaderWatch); it does not close
// the connection, whose owner closes it after the store. Calling it again
// does nothing. The store still appends and reads after Close, but an
// attempt sent to a silent leader then waits out AttemptTimeout.
func (s *Store) Close() error { return s.leaders.close() }

// Conn returns the underlying NATS connection.
func (s *Store) Conn() *nats.Conn { return s.nc }

// JetStream returns the JetStream handle (consumers, raw benchmarks).
func (s *Store) JetStream() jetstream.JetStream { return s.js }

// Config returns the store's configuration with defaults applied.
func (s *Store) Config() StoreConfig { return s.cfg }

// Ensure creates or updates every domain stream. Streams allow atomic
// batches (the group commit); on a server too old to know them the store
// appends one event at a time.
func (s *Store) Ensure(ctx context.Context) error {
	for _, spec := range Streams() {
		replicas, err := s.replicasFor(ctx, spec.Name)
		if err != nil {
			return fmt.Errorf("create stream %s: %w", spec.Name, err)
		}
		cfg := jetstream.StreamConfig{
			Name:               spec.Name,
			Description:        spec.Description,
			Subjects:           []string{spec.Subjects()},
			Retention:          jetstream.LimitsPolicy,
			Storage:            jetstream.FileStorage,
			Replicas:           replicas,
			Duplicates:         s.cfg.DuplicateWindow,
			AllowDirect:        true,
			Discard:            jetstream.DiscardOld,
			AllowAtomicPublish: true,
			AllowMsgSchedules:  spec.Schedules,
			AllowRollup:        spec.Schedules,
		}
		var st jetstream.Stream
		err = s.whileClusterForms(ctx, func(ctx context.Context) (err error) {
			st, err = s.js.CreateOrUpdateStream(ctx, cfg)
			return err
		})
		if err != nil {
			return fmt.Errorf("create stream %s: %w", spec.Name, err)
		}
		s.learn(spec.Name, st.CachedInfo().Config)
	}
	var b jetstream.ObjectStore
	err := s.whileClusterForms(ctx, func(ctx context.Context) (err error) {
		b, err = s.ensureBlobs(ctx)
		return err
	})
	if err != nil {
		return fmt.Errorf("create blob bucket %s: %w", BlobBucket, err)
	}
	s.mu.Lock()
	s.bucket = b
	s.mu.Unlock()
	return nil
}

// replicasFor returns the replicas Ensure gives stream: the operator's
// (StoreConfig.Replicas) when asked, else the stream's own when it
// exists, else those of the queue stream when it exists, else 1. A
// client's store never changes what a cluster's operator chose.
func (s *Store) replicasFor(ctx context.Context, stream string) (int, error) {
	if s.cfg.Replicas > 0 {
		return s.cfg.Replicas, nil
	}
	for _, name := range []string{stream, StreamQueue} {
		var info *jetstream.StreamInfo
		err := s.whileClusterForms(ctx, func(ctx context.Context) error {
			st, err := s.js.Stream(ctx, name)
			if err == nil {
				info = st.CachedInfo()
			}
			return err
		})
		if jsClassOf(err) == jsNotFound {
			continue
		}
		if err != nil {
			return 0, fmt.Errorf("stream %s: %w", name, err)
		}
		return max(info.Config.Replicas, 1), nil
	}
	return 1, nil
}

// Expect is the concurrency check of an append.
type Expect struct {
	// Filter is the aggregate's subject filter (e.g. trellis.queue.*.<id>.>).
	Filter string
	// LastSeq is the stream sequence of the aggregate's last event as the
	// caller saw it; 0 means "the aggregate must not exist yet".
	LastSeq uint64
	// None appends without a check: only for the events after the first
	// of an AppendChain, whose first event carries the aggregate's check.
	None bool
}

// Appended is the result of an append.
type Appended struct {
	// Seq is the stream sequence of the stored event.
	Seq uint64
	// Duplicate is true when JetStream had already stored a message with the
	// same message id: Seq is then the original's sequence.
	Duplicate bool
}

// Append stores env on subject if the aggregate's last sequence is still
// expect.LastSeq. msgID overrides the Nats-Msg-Id (default env.ID). A stale
// expectation returns an error wrapping ErrWrongLastSequence.
//
// Appends are idempotent: when no acknowledgement arrives (a timeout, a
// leader election, a reconnect) the same message is sent again until ctx
// ends, and JetStream's duplicate window stores it once. A retry whose first
// attempt was in fact stored fails the sequence check (the aggregate moved
// on by our own event); Append recognises its own event id among the
// aggregate's events and reports the original sequence as a duplicate.
//
// Appends go through the stream's group commit (see AppendAll): under load
// several callers' events share one synced write.
func (s *Store) Append(ctx context.Context, subject string, env Envelope, expect Expect, msgID string) (Appended, error) {
	return s.AppendWithHeaders(ctx, subject, env, expect, msgID, nil)
}

// AppendWithHeaders is Append with extra message headers: a summary of the
// event that readers can fetch without its payload (a headers-only
// consumer).
func (s *Store) AppendWithHeaders(ctx context.Context, subject string, env Envelope, expect Expect, msgID string, hdr nats.Header) (Appended, error) {
	res := s.AppendAll(ctx, []Pending{{Subject: subject, Envelope: env, Expect: expect, MsgID: msgID, Header: hdr}})
	return res[0].Appended, res[0].Err
}

// publishOne stores one message on its own, retrying until ctx ends when
// no acknowledgement arrives (see Append).
func (s *Store) publishOne(ctx context.Context, r *request) (Appended, error) {
	backoff := 50 * time.Millisecond
	for {
		actx, acancel := s.attemptContext(ctx, r.stream)
		ack, err := s.js.PublishMsg(actx, r.message())
		err = attemptErr(actx, err)
		acancel()
		if err == nil {
			return Appended{Seq: ack.Sequence, Duplicate: ack.Duplicate}, nil
		}
		if jsClassOf(err) == jsWrongLastSeq {
			if seq, ok := s.findOwnInDoubt(ctx, r); ok {
				return Appended{Seq: seq, Duplicate: true}, nil
			}
			return Appended{}, fmt.Errorf("append %s: %w", r.p.Subject, ErrWrongLastSequence)
		}
		if !retryable(err) || ctx.Err() != nil {
			return Appended{}, fmt.Errorf("append %s: %w", r.p.Subject, err)
		}
		if perr := permissionError(s.nc); perr != nil && jsClassOf(err) == jsUnanswered {
			return Appended{}, fmt.Errorf("append %s: %w: %w", r.p.Subject, perr, err)
		}
		// Sent, answer lost: the next attempt may race the first one's
		// commit.
		r.inDoubt = true
		select {
		case <-ctx.Done():
			return Appended{}, fmt.Errorf("append %s: %w (last error: %v)", r.p.Subject, ctx.Err(), err)
		case <-time.After(backoff):
		}
		if backoff < time.Second {
			backoff *= 2
		}
	}
}

// findOwnInDoubt looks for r's own event after a wrong-last-sequence
// answer. An append sent before whose answer was lost may still be being
// committed (a batch is stored before its message ids are known to the
// deduplication, and a busy server makes that window long): for such an
// append the search is repeated for up to a second before the append is
// called stale. A first attempt looks once.
func (s *Store) findOwnInDoubt(ctx context.Context, r *request) (uint64, bool) {
	wait := 25 * time.Millisecond
	deadline := time.Now().Add(time.Second)
	for {
		if seq, ok := s.findOwn(ctx, r.p.Subject, r.p.Expect, r.p.Envelope.ID, r.inDoubt); ok || !r.inDoubt || time.Now().After(deadline) {
			return seq, ok
		}
		select {
		case <-ctx.Done():
			return 0, false
		case <-time.After(wait):
		}
		wait *= 2
	}
}

// findOwn looks for an event with id among the aggregate's events appended
// after the expected sequence (all subjects of the filter, or the subject
// alone): only those can be an earlier attempt of this append. An append
// in doubt (an earlier attempt went unanswered) asks the stream's leader
// too when the replica that answered the load lacks the event: right after
// an election an append is sent again at once, and a lagging replica's
// "not there" would make a stored append read as refused. A stored attempt
// passed the check, so it is the aggregate's first event after the
// expected sequence: one read. An append not in doubt (an ordinary
// conflict) asks no more than the load.
func (s *Store) findOwn(ctx context.Context, subject string, expect Expect, id string, inDoubt bool) (uint64, bool) {
	filter := expect.Filter
	if filter == "" {
		filter = subject
	}
	spec, err := StreamFor(subject)
	if err != nil {
		return 0, false
	}
	recs, _, err := s.LoadFrom(ctx, spec.Name, filter, expect.LastSeq+1)
	if err == nil {
		for i := len(recs) - 1; i >= 0; i-- {
			if recs[i].ID == id {
				return recs[i].Seq, true
			}
		}
	}
	if !inDoubt || !s.replicated(spec.Name) {
		return 0, false
	}
	m, ok, err := s.leaderNext(ctx, spec.Name, filter, expect.LastSeq+1, nil)
	if err != nil || !ok || m.ID != id {
		return 0, false
	}
	return m.Seq, true
}

// loadBatch is how many events one direct-get round trip returns.
const loadBatch = 512

// Load returns every event of the aggregate whose subjects match filter, in
// order, and the sequence of the last one (0 and no events when the
// aggregate does not exist). It uses batched direct gets: one round trip per
// 512 events.
func (s *Store) Load(ctx context.Context, stream, filter string) ([]Recorded, uint64, error) {
	return s.LoadFrom(ctx, stream, filter, 1)
}

// LoadFrom is Load starting at stream sequence from: the events a cached
// aggregate has not seen yet. The returned sequence is 0 when there are
// none.
func (s *Store) LoadFrom(ctx context.Context, stream, filter string, from uint64) ([]Recorded, uint64, error) {
	var out []Recorded
	if from == 0 {
		from = 1
	}
	last, found, err := s.lastMatching(ctx, stream, filter)
	if err != nil {
		return nil, 0, err
	}
	switch {
	case !found && !s.replicated(stream):
		return nil, 0, nil
	case !found:
		// Nothing as the answering replica saw it, which may lag: read as
		// before, and a replicated stream's leader is asked below.
	case last.Seq < from:
		// Nothing after from: no read of the stream past it.
		return nil, 0, nil
	case last.Seq == from:
		// The only new event is the last one, which the probe brought.
		return s.loaded(ctx, []Recorded{last})
	}
	// The first round trip asks for one event: the server answers with how
	// many more match, and the next asks for exactly those. A batch asking
	// for more than match makes the server look for the rest through every
	// message to the stream's end (a wildcard filter, as every aggregate's
	// is, is matched message by message there).
	want := 1
	for {
		batch, pending, err := s.directBatch(ctx, stream, filter, from, want)
		if err != nil {
			return nil, 0, err
		}
		out = append(out, batch...)
		if pending == 0 || len(batch) == 0 {
			break
		}
		from = batch[len(batch)-1].Seq + 1
		want = int(min(pending, loadBatch))
	}
	if len(out) == 0 && from == 1 && s.replicated(stream) {
		// Nothing at all, as a replica saw it: direct gets may be answered
		// by a replica that has not applied the latest writes yet, and an
		// aggregate just created elsewhere would look absent. The stream's
		// leader has every acknowledged write.
		var err error
		if out, err = s.loadFromLeader(ctx, stream, filter); err != nil {
			return nil, 0, err
		}
	}
	return s.loaded(ctx, out)
}

// loaded resolves the payloads stored apart of a load's events and
// returns them with the sequence of the last.
func (s *Store) loaded(ctx context.Context, out []Recorded) ([]Recorded, uint64, error) {
	if err := s.resolveAll(ctx, out); err != nil {
		return nil, 0, err
	}
	var last uint64
	if len(out) > 0 {
		last = out[len(out)-1].Seq
	}
	return out, last, nil
}

// replicated reports whether stream has more than one replica, as the
// stream's configuration says (not this store's: a client's store asks for
// no replicas and reads a replicated stream all the same). Unknown (the
// server cannot tell now) counts as replicated: the leader is asked.
func (s *Store) replicated(stream string) bool {
	tr, ok := s.streamTraits(stream)
	return !ok || tr.replicas > 1
}

// loadFromLeader reads every event matching filter from the stream's
// leader, one message per request: the slow path of a load that a lagging
// replica answered with nothing.
func (s *Store) loadFromLeader(ctx context.Context, stream, filter string) ([]Recorded, error) {
	var out []Recorded
	for seq := uint64(1); ; {
		m, ok, err := s.leaderNext(ctx, stream, filter, seq, nil)
		if err != nil {
			return nil, err
		}
		if !ok {
			return out, nil
		}
		if m.Bad != nil {
			return nil, m.Bad
		}
		out = append(out, m.Recorded)
		seq = m.Seq + 1
	}
}

// directBatch fetches up to want messages matching filter from seq on,
// and how many more match after them (as the server counted), asking
// again when an attempt meets silence for AttemptTimeout (a direct get
// goes to any replica, and one cut off answers nothing) until
// RequestTimeout.
func (s *Store) directBatch(ctx context.Context, stream, filter string, from uint64, want int) ([]Recorded, uint64, error) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.RequestTimeout)
	defer cancel()
	for {
		actx, acancel := context.WithTimeout(ctx, s.cfg.AttemptTimeout)
		out, pending, err := s.directBatchOnce(actx, stream, filter, from, want)
		acancel()
		if err == nil || !errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil {
			return out, pending, err
		}
	}
}

// directBatchOnce is one attempt of directBatch.
func (s *Store) directBatchOnce(ctx context.Context, stream, filter string, from uint64, want int) ([]Recorded, uint64, error) {
	req, err := json.Marshal(map[string]any{"seq": from, "next_by_subj": filter, "batch": want})
	if err != nil {
		return nil, 0, err
	}
	inbox, next, unsub, err := s.directReplies(want)
	if err != nil {
		return nil, 0, fmt.Errorf("load %s: subscribe: %w", filter, err)
	}
	defer unsub()
	if err := s.nc.PublishRequest("$JS.API.DIRECT.GET."+stream, inbox, req); err != nil {
		return nil, 0, fmt.Errorf("load %s: %w", filter, err)
	}
	var out []Recorded
	for {
		msg, err := next(ctx)
		if err != nil {
			return nil, 0, fmt.Errorf("load %s: %w", filter, err)
		}
		switch kind, err := classifyDirect(msg); kind {
		case directMsg:
		case directNone:
			return nil, 0, nil
		case directEnd:
			np, _ := strconv.ParseUint(msg.Header.Get("Nats-Num-Pending"), 10, 64)
			return out, np, nil
		default:
			return nil, 0, fmt.Errorf("load %s: %w", filter, err)
		}
		rec, err := decodeDirect(msg)
		if err != nil {
			return nil, 0, err
		}
		out = append(out, rec)
	}
}

func decodeDirect(msg *nats.Msg) (Recorded, error) {
	seq, err := strconv.ParseUint(msg.Header.Get("Nats-Sequence"), 10, 64)
	if err != nil {
		return Recorded{}, fmt.Errorf("direct get: bad sequence header: %w", err)
	}
	return Decode(msg.Header.Get("Nats-Stream"), msg.Header.Get("Nats-Subject"), seq, msg.Data)
}

// Decode parses a stored message body into a Recorded event.
func Decode(stream, subject string, seq uint64, data []byte) (Recorded, error) {
	env, err := DecodeEnvelope(data)
	if err != nil {
		return Recorded{}, fmt.Errorf("decode event %s #%d: %w", subject, seq, err)
	}
	return Recorded{Envelope: env, Stream: stream, Subject: subject, Seq: seq}, nil
}

// LastSeq returns the stream's last sequence (0 for an empty stream).
func (s *Store) LastSeq(ctx context.Context, stream string) (uint64, error) {
	// Stream fetches the stream's info: one API request, not two.
	st, err := s.js.Stream(ctx, stream)
	if err != nil {
		return 0, fmt.Errorf("stream %s: %w", stream, err)
	}
	return st.CachedInfo().State.LastSeq, nil
}

// Get returns the event at seq.
func (s *Store) Get(ctx context.Context, stream string, seq uint64) (Recorded, error) {
	st, err := s.js.Stream(ctx, stream)
	if err != nil {
		return Recorded{}, fmt.Errorf("stream %s: %w", stream, err)
	}
	raw, err := st.GetMsg(ctx, seq)
	if err != nil {
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			return Recorded{}, fmt.Errorf("%s #%d: %w", stream, seq, ErrNotFound)
		}
		return Recorded{}, fmt.Errorf("%s #%d: %w", stream, seq, err)
	}
	rec, err := Decode(stream, raw.Subject, raw.Sequence, raw.Data)
	if err != nil {
		return rec, err
	}
	return rec, s.Resolve(ctx, &rec)
}
