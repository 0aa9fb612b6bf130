package retention

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/command"
	"github.com/trellis/trellis/events"
	"github.com/trellis/trellis/taskqueue"
)

// DefaultBatchTasks is how many tasks one archive and its prune record
// hold (the record and one tombstone per task form one atomic batch, at
// most events.StoreConfig.BatchMax events).
const DefaultBatchTasks = 200

// Options configures Prune.
type Options struct {
	// OlderThan is the age of the cut: a task is pruned when every event
	// of it was stored before now - OlderThan (required, positive).
	OlderThan time.Duration
	// Archive is the directory the archives are written to (created when
	// missing; required).
	Archive string
	// Actor is the actor of the record and tombstones (default
	// "trellis-prune").
	Actor string
	// BatchTasks bounds the tasks of one archive (default
	// DefaultBatchTasks, at most 255).
	BatchTasks int
	// Key is the server's audit key (audit.AnchorKey): each record
	// carries its MAC, so `audit verify` with the key trusts it (and only
	// it) to account for the sequences it removed. Without a key a record
	// is trusted only by a verify that has no key either.
	Key []byte
	// RemoveRate bounds how many messages a second the prune removes,
	// alone or in a purge of a queue's tombstones (see finish), each
	// removal a synced write on the stream the pools append
	// to; a head of pruned sequences goes in one purge whatever the rate.
	// 0 removes them as fast as the store takes them. A lower rate leaves
	// more of the disk's syncs to the pools running beside the prune, and
	// makes the prune take longer.
	RemoveRate int
	// Now is the clock (default time.Now).
	Now func() time.Time
	// AfterArchive, when set, is called once each archive is durable,
	// before its record is appended (tests stop a prune there).
	AfterArchive func(path string)
	// AfterGateRecord, when set, is called once the record of a batch of
	// gates is appended, before their cut events are removed (tests stop
	// a prune there).
	AfterGateRecord func()
	// BeforeOpenSnapshots, when set, is called before a batch of open
	// tasks is snapshotted (tests move a task there).
	BeforeOpenSnapshots func()
	// AfterRunTombstones, when set, is called once a batch of workflow
	// runs (or agent tasks) is tombstoned, before its record is appended (tests stop a
	// prune there).
	AfterRunTombstones func()
	// AfterRecord, when set, is called once a batch's record and
	// tombstones are appended, before its events are removed (tests stop a
	// prune there).
	AfterRecord func()
}

// ArchiveResult is one archive a prune wrote, with its record.
type ArchiveResult struct {
	// File is the archive's path; Digest its trailer's digest (the
	// record carries it too).
	File   string `json:"file"`
	Digest string `json:"digest"`
	Tasks  int    `json:"tasks"`
	Events int    `json:"events"`
	Bytes  int64  `json:"bytes"`
	// Record is the prune record's event id and RecordSeq its sequence
	// on the queue stream.
	Record    string `json:"record"`
	RecordSeq uint64 `json:"record_seq"`

	// Gates counts the open gates whose events before a snapshot it
	// holds (see scanGates), Schedules the schedules and Controls the
	// queues' controls (see schedules.go), OpenTasks the open tasks (see
	// chooseOpen).
	Gates     int `json:"gates,omitempty"`
	Schedules int `json:"schedules,omitempty"`
	Controls  int `json:"controls,omitempty"`
	Uniques   int `json:"unique_keys,omitempty"`
	OpenTasks int `json:"open_tasks,omitempty"`
	// Runs counts the finished workflow runs it holds (see runs.go),
	// AgentTasks the agent task names (see agenttasks.go).
	Runs       int `json:"workflow_runs,omitempty"`
	AgentTasks int `json:"agent_tasks,omitempty"`
}

// Result reports a prune.
type Result struct {
	// Cut is the prune's cut: tasks whose events were all stored before
	// it were pruned.
	Cut time.Time `json:"cut"`
	// Tasks and Events count what was removed (Sequences also counts
	// fired timers and tombstones).
	Tasks     int             `json:"tasks"`
	Events    int             `json:"events"`
	Sequences int             `json:"sequences"`
	Archives  []ArchiveResult `json:"archives"`
	// Kept counts the tasks that stay, by reason (open, finished after
	// the cut, ...).
	Kept map[string]int `json:"kept"`
	// Completed counts the sequences of an interrupted prune's last
	// record that this prune removed one at a time or in a purge of
	// tombstones (with, in that purge, any tombstone an earlier record
	// accounts for that was still in the log); a purge of the stream's
	// head is not counted.
	Completed int `json:"completed"`
	// IgnoredRecords counts the prune records in the retention log this
	// prune did not act on: of a stream prunes do not remove from, or,
	// when it has the audit key, without a valid MAC (appended with NATS
	// credentials alone).
	IgnoredRecords int   `json:"ignored_records,omitempty"`
	Millis         int64 `json:"millis"`

	// GateEvents counts the events of open gates cut at a snapshot (see
	// scanGates): not in Events, which counts the tasks'. GatesKept
	// counts the gates kept whole by reason (none: a gate without a
	// snapshot before the cut is not counted).
	GateEvents int `json:"gate_events,omitempty"`
	// ScheduleEvents counts the events of schedules cut at a snapshot
	// (ticks and the events they fired; see schedules.go).
	ScheduleEvents int `json:"schedule_events,omitempty"`
	// ControlEvents counts the events of queues' controls cut at a
	// snapshot.
	ControlEvents int `json:"control_events,omitempty"`
	// UniqueEvents counts the events of unique keys cut at a snapshot.
	UniqueEvents int            `json:"unique_events,omitempty"`
	GatesKept    map[string]int `json:"gates_kept,omitempty"`
	// OpenTasks counts the open tasks cut at a snapshot and OpenEvents
	// their events removed (see chooseOpen; not in Tasks and Events).
	OpenTasks  int `json:"open_tasks,omitempty"`
	OpenEvents int `json:"open_events,omitempty"`
	// Runs counts the finished workflow runs removed whole and RunEvents
	// their events (see runs.go; not in Tasks and Events); RunsKept the
	// runs that stay, by reason.
	Runs      int            `json:"workflow_runs,omitempty"`
	RunEvents int            `json:"workflow_events,omitempty"`
	RunsKept  map[string]int `json:"workflow_runs_kept,omitempty"`
	// AgentTasks counts the agent task names whose events were removed
	// (every task of the name completed before the cut; see
	// agenttasks.go), AgentTaskEvents their events, AgentTasksKept the
	// names that stay, by reason.
	AgentTasks      int            `json:"agent_tasks,omitempty"`
	AgentTaskEvents int            `json:"agent_task_events,omitempty"`
	AgentTasksKept  map[string]int `json:"agent_tasks_kept,omitempty"`
}

// Prune removes the finished queue tasks whose events were all stored
// more than opts.OlderThan ago (and the workflow runs that ended before
// then: see runs.go). Batch by batch it writes their events to
// an archive in opts.Archive and syncs it, then appends, as one atomic
// batch, a prune record on the retention aggregate (checked against the
// retention log as this prune read it: a second prune running at the same
// time fails its check and stops with a conflict) and a tombstone on each
// task (checked against the task's last event: a task that changed since
// the scan fails the batch, which is decided again without it), then
// purges the tasks' events. A crash leaves the log as it was (no record:
// an archive without a record prunes nothing) or recorded and tombstoned
// but not yet purged, which the next prune finishes first.
func Prune(ctx context.Context, store *events.Store, opts Options) (*Result, error) {
	start := time.Now()
	if opts.OlderThan <= 0 {
		return nil, trellis.FieldError("older_than", "must be a positive duration, got %s", opts.OlderThan)
	}
	if err := checkRemoveRate(opts.RemoveRate); err != nil {
		return nil, err
	}
	if err := checkArchiveDir(opts.Archive); err != nil {
		return nil, err
	}
	if opts.Actor == "" {
		opts.Actor = "trellis-prune"
	}
	if opts.BatchTasks <= 0 {
		opts.BatchTasks = DefaultBatchTasks
	}
	opts.BatchTasks = min(opts.BatchTasks, store.Config().BatchMax-1)
	now := time.Now
	if opts.Now != nil {
		now = opts.Now
	}
	res := &Result{Cut: now().Add(-opts.OlderThan).UTC(), Kept: map[string]int{}, Archives: []ArchiveResult{}}
	stream, err := store.JetStream().Stream(ctx, events.StreamQueue)
	if err != nil {
		return nil, command.StoreError("prune", err)
	}
	log, err := readLog(ctx, store, opts.Key)
	if err != nil {
		return nil, command.StoreError("prune: read the retention log", err)
	}
	res.IgnoredRecords = log.ignored
	log.pace = newPacer(opts.RemoveRate)
	if n, err := log.finish(ctx, stream); err != nil {
		return nil, command.StoreError("prune: finish the last prune", err)
	} else {
		res.Completed = n
	}
	scan, err := scanQueue(ctx, store, &log.pruned)
	if err != nil {
		return nil, command.StoreError("prune", err)
	}
	runs, err := scanRuns(ctx, store, log.otherPruned(events.StreamWorkflows))
	if err != nil {
		return nil, command.StoreError("prune: read the workflow runs", err)
	}
	chosen, kept := scan.choose(res.Cut, runs.awaited())
	res.Kept = kept
	for len(chosen) > 0 {
		n := min(len(chosen), opts.BatchTasks)
		batch := chosen[:n]
		chosen = chosen[n:]
		for attempt := 1; len(batch) > 0; attempt++ {
			ar, err := pruneBatch(ctx, store, stream, log, scan.firstSeq, batch, res.Cut, opts)
			if err == nil {
				res.Archives = append(res.Archives, ar.ArchiveResult)
				res.Tasks += ar.Tasks
				res.Events += ar.Events
				res.Sequences += ar.sequences
				break
			}
			if !errors.Is(err, events.ErrWrongLastSequence) || attempt >= 3 {
				return res, err
			}
			// A task or the retention log moved since the scan.
			moved, err := log.moved(ctx, store)
			if err != nil {
				return res, command.StoreError("prune", err)
			}
			if moved {
				return res, trellis.Errorf(trellis.CodeConflict,
					"another prune ran while this one did (the retention log moved on): this prune stopped after %d task(s); run it again", res.Tasks)
			}
			if batch, err = unchanged(ctx, store, batch); err != nil {
				return res, command.StoreError("prune", err)
			}
			res.Kept["changed during the prune"] += n - len(batch)
		}
	}
	if err := pruneOpen(ctx, store, stream, log, scan.firstSeq, chooseOpen(scan, res.Cut, log), res, opts); err != nil {
		return res, err
	}
	res.GatesKept = map[string]int{}
	gates, err := scanGates(ctx, store, res.Cut, log.continued, delayedTasks(scan), res.GatesKept)
	if err != nil {
		return res, command.StoreError("prune: read the gates", err)
	}
	if err := pruneGates(ctx, store, stream, log, scan.firstSeq, gates, res, opts); err != nil {
		return res, err
	}
	if err := pruneRuns(ctx, store, log, runs, res, opts); err != nil {
		return res, err
	}
	if err := pruneAgentTasks(ctx, store, log, res, opts); err != nil {
		return res, err
	}
	res.Millis = time.Since(start).Milliseconds()
	return res, nil
}

// batchResult is one pruned batch.
type batchResult struct {
	ArchiveResult
	sequences      int
	scheduleEvents int
	controlEvents  int
	uniqueEvents   int
}

// pruneBatch archives, records and purges one batch of tasks.
func pruneBatch(ctx context.Context, store *events.Store, stream jetstream.Stream, log *retentionLog, firstSeq uint64, batch []*candidate, cut time.Time, opts Options) (*batchResult, error) {
	at := time.Now() // the events' time (now() is only the cut's clock)
	recordID := events.NewID(at)
	name := "prune-" + recordID + ".jsonl"
	a, err := writeArchive(opts.Archive, name, firstSeq, batch)
	if err != nil {
		return nil, trellis.FieldError("archive", "%v (nothing was pruned from this batch)", err)
	}
	if opts.AfterArchive != nil {
		opts.AfterArchive(a.path)
	}
	p := events.PrunedPayload{Stream: events.StreamQueue, Cut: cut.Format(time.RFC3339Nano), Archive: name, Digest: a.digest,
		Events: a.events, Removed: a.removed.Ranges(), Tombstones: len(batch)}
	for _, c := range batch {
		p.Aggregates = append(p.Aggregates, c.queue+"/"+c.id)
	}
	p = p.Sign(opts.Key)
	rec, err := events.NewEnvelope(at, events.PrunedType, events.RetentionAggregate, opts.Actor, events.PrunedSchema, p)
	if err != nil {
		return nil, err
	}
	rec.ID, rec.Prev = recordID, log.lastHash
	ps := []events.Pending{{Subject: events.RetentionSubjectPrefix + events.PrunedType, Envelope: rec,
		Expect: events.Expect{Filter: events.RetentionFilter, LastSeq: log.lastSeq}}}
	for _, c := range batch {
		tomb, err := events.NewEnvelope(at, taskqueue.Pruned, c.id, opts.Actor, taskqueue.Schema, taskqueue.PrunedPayload{Record: recordID, Archive: name})
		if err != nil {
			return nil, err
		}
		tomb.Prev = c.lastHash
		ps = append(ps, events.Pending{Subject: taskqueue.Subject(c.queue, c.id, taskqueue.Pruned), Envelope: tomb,
			Expect: events.Expect{Filter: taskqueue.Filter(c.id), LastSeq: c.lastSeq}})
	}
	acks, err := store.AppendAtomic(ctx, ps)
	if err != nil {
		if errors.Is(err, events.ErrWrongLastSequence) {
			_ = os.Remove(a.path) // refused: no record, the archive prunes nothing
			return nil, err
		}
		// Any other error (a timeout, a cancelled prune) leaves the batch
		// in doubt: it may be stored, its record naming this archive, so
		// the archive stays (unnamed, it prunes nothing).
		return nil, command.StoreError("prune: append the prune record", err)
	}
	if opts.AfterRecord != nil {
		opts.AfterRecord()
	}
	log.recorded(acks[0].Seq, events.Hash(rec), &p)
	log.pruned.Add(acks[0].Seq+1, acks[0].Seq+uint64(len(batch)))
	for _, r := range p.Removed {
		log.pruned.Add(r[0], r[1])
	}
	if _, err := log.finish(ctx, stream); err != nil {
		return nil, command.StoreError("prune: purge the pruned tasks (the record is appended: the next prune finishes it)", err)
	}
	seqs := len(batch)
	for _, r := range p.Removed {
		seqs += int(r[1] - r[0] + 1)
	}
	return &batchResult{ArchiveResult: ArchiveResult{File: a.path, Digest: a.digest, Tasks: len(batch), Events: a.events, Bytes: a.bytes,
		Record: recordID, RecordSeq: acks[0].Seq}, sequences: seqs}, nil
}

// unchanged returns the tasks of batch whose last event is still the one
// the scan saw.
func unchanged(ctx context.Context, store *events.Store, batch []*candidate) ([]*candidate, error) {
	var out []*candidate
	for _, c := range batch {
		_, last, err := store.Load(ctx, events.StreamQueue, taskqueue.FilterIn(c.queue, c.id))
		if err != nil && !errors.Is(err, events.ErrNotFound) {
			return nil, err
		}
		if last == c.lastSeq {
			out = append(out, c)
		}
	}
	return out, nil
}

// checkRemoveRate checks Options.RemoveRate.
func checkRemoveRate(rate int) error {
	if rate < 0 || rate > MaxRemoveRate {
		return trellis.FieldError("remove_rate", "must be between 0 (unpaced) and %d messages a second, got %d", MaxRemoveRate, rate)
	}
	return nil
}

// checkArchiveDir checks that dir can take archives (creating it when
// missing).
func checkArchiveDir(dir string) error {
	if strings.TrimSpace(dir) == "" {
		return trellis.FieldError("archive", "is required: the directory the pruned events are archived to")
	}
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		if err := os.MkdirAll(dir, 0o750); err != nil {
			return trellis.FieldError("archive", "cannot create %s: %v", dir, err)
		}
	case err != nil:
		return trellis.FieldError("archive", "%v", err)
	case !fi.IsDir():
		return trellis.FieldError("archive", "%s is a file, not a directory", dir)
	}
	f, err := os.CreateTemp(dir, ".prune-check-*")
	if err != nil {
		return trellis.FieldError("archive", "cannot write to %s: %v", dir, err)
	}
	name := f.Name()
	_ = f.Close()
	if err := os.Remove(name); err != nil {
		return trellis.FieldError("archive", "cannot write to %s: %v", filepath.Dir(name), err)
	}
	return nil
}
