package main

import (
	"context"
	"errors"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/events"
)

// benchMetadataKey tags the streams a benchmark creates on a cluster
// with the run that created them. The tag also makes each creation
// unique: JetStream answers the creation of a stream that exists with
// the same configuration as a success, never with one of another run.
const benchMetadataKey = "trellis_bench_run"

// benchStreams are the Trellis streams one benchmark run created on a
// cluster: each name with the creation time the server gave it. Only
// these are deleted at the end; a stream of the same name that the run
// did not create (one that existed before, or was deleted and created
// again by someone else meanwhile) is left alone.
type benchStreams struct {
	js      jetstream.JetStream
	created map[string]time.Time
}

// createBenchStreams creates every Trellis stream (and the blob bucket's)
// for a benchmark, each only if it does not exist: a name already in use
// stops it with a conflict, after deleting what it created itself. The
// store's Ensure then completes their configuration.
func createBenchStreams(ctx context.Context, js jetstream.JetStream, replicas int, runID string) (*benchStreams, error) {
	b := &benchStreams{js: js, created: map[string]time.Time{}}
	meta := map[string]string{benchMetadataKey: runID}
	taken := func(name string, err error) error {
		if errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) || errors.Is(err, jetstream.ErrBucketExists) {
			return trellis.Errorf(trellis.CodeConflict, "stream %s appeared on the cluster while the benchmark created its streams: "+
				"it needs a cluster of its own (make bench-cluster starts one)", name)
		}
		return trellis.Errorf(trellis.CodeUnavailable, "create stream %s: %w", name, err)
	}
	for _, spec := range events.Streams() {
		st, err := js.CreateStream(ctx, jetstream.StreamConfig{
			Name: spec.Name, Description: spec.Description, Subjects: []string{spec.Subjects()},
			Retention: jetstream.LimitsPolicy, Storage: jetstream.FileStorage, Replicas: replicas,
			AllowDirect: true, Discard: jetstream.DiscardOld, AllowAtomicPublish: true,
			AllowMsgSchedules: spec.Schedules, AllowRollup: spec.Schedules, Metadata: meta,
		})
		if err != nil {
			b.delete(ctx)
			return nil, taken(spec.Name, err)
		}
		b.created[spec.Name] = st.CachedInfo().Created
	}
	blobs := "OBJ_" + events.BlobBucket
	_, err := js.CreateObjectStore(ctx, jetstream.ObjectStoreConfig{Bucket: events.BlobBucket, Storage: jetstream.FileStorage,
		Replicas: replicas, Metadata: meta})
	if err == nil {
		var st jetstream.Stream
		if st, err = js.Stream(ctx, blobs); err == nil {
			b.created[blobs] = st.CachedInfo().Created
		}
	}
	if err != nil {
		b.delete(ctx)
		return nil, taken(blobs, err)
	}
	return b, nil
}

// delete deletes the streams the run created, and no other.
func (b *benchStreams) delete(ctx context.Context) {
	for name, created := range b.created {
		st, err := b.js.Stream(ctx, name)
		if err != nil || !st.CachedInfo().Created.Equal(created) {
			continue // gone, or not the stream this run created
		}
		// Best effort: a run on a cluster that still holds it is refused.
		_ = b.js.DeleteStream(ctx, name)
	}
}
