package events

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/nats-io/nats.go/jetstream"
)

// Events of any size.
//
// A payload too large for one NATS message is stored in the JetStream
// Object Store bucket BlobBucket (itself a stream, so the log stays the
// truth and is rebuilt from JetStream alone), named by the SHA-256 of its
// bytes. The event keeps its envelope and carries PayloadRef instead of
// the payload; every read path of the Store (Load, LoadFrom, Read,
// Subscribe, Get, Resolve) fetches the payload back and checks its digest,
// so domains, projections and replays see the whole payload.

// BlobBucket is the Object Store bucket that holds large payloads.
const BlobBucket = "TRELLIS_BLOBS"

// BlobRef names a payload stored in BlobBucket.
type BlobRef struct {
	// Digest is "sha256-" + the hex SHA-256 of the payload: the object's
	// name.
	Digest string `json:"digest"`
	// Size is the payload's length in bytes.
	Size int64 `json:"size"`
}

// ErrBlob reports a payload reference that cannot be resolved: the object
// is missing or its bytes do not match the digest.
var ErrBlob = errors.New("large payload cannot be resolved")

func blobDigest(data []byte) string {
	sum := sha256.Sum256(data)
	var out [len("sha256-") + 2*sha256.Size]byte
	copy(out[:], "sha256-")
	hex.Encode(out[len("sha256-"):], sum[:])
	return string(out[:])
}

// blobs returns the bucket, creating it when this store did not (a store
// that did not call Ensure).
func (s *Store) blobs(ctx context.Context) (jetstream.ObjectStore, error) {
	s.mu.Lock()
	b := s.bucket
	s.mu.Unlock()
	if b != nil {
		return b, nil
	}
	b, err := s.js.ObjectStore(ctx, BlobBucket)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		b, err = s.ensureBlobs(ctx)
	}
	if err != nil {
		return nil, fmt.Errorf("blob bucket: %w", err)
	}
	s.mu.Lock()
	s.bucket = b
	s.mu.Unlock()
	return b, nil
}

func (s *Store) ensureBlobs(ctx context.Context) (jetstream.ObjectStore, error) {
	replicas, err := s.replicasFor(ctx, "OBJ_"+BlobBucket)
	if err != nil {
		return nil, err
	}
	return s.js.CreateOrUpdateObjectStore(ctx, jetstream.ObjectStoreConfig{
		Bucket:      BlobBucket,
		Description: "Trellis: payloads of events too large for one message, named by their SHA-256",
		Storage:     jetstream.FileStorage,
		Replicas:    replicas,
	})
}

// offload stores env's payload in the blob bucket and returns the envelope
// that refers to it.
func (s *Store) offload(ctx context.Context, env Envelope) (Envelope, error) {
	if int64(len(env.Payload)) > s.cfg.MaxPayloadBytes {
		return env, fmt.Errorf("%d bytes, more than the %d a payload may hold: %w", len(env.Payload), s.cfg.MaxPayloadBytes, ErrPayloadTooLarge)
	}
	b, err := s.blobs(ctx)
	if err != nil {
		return env, err
	}
	ref := &BlobRef{Digest: blobDigest(env.Payload), Size: int64(len(env.Payload))}
	if info, err := b.GetInfo(ctx, ref.Digest); err == nil && int64(info.Size) == ref.Size {
		// Content-addressed: the same payload is stored already.
	} else if _, err := b.PutBytes(ctx, ref.Digest, env.Payload); err != nil {
		return env, fmt.Errorf("store the %d-byte payload of %s: %w", ref.Size, env.Type, err)
	}
	env.Payload, env.PayloadRef = nil, ref
	return env, nil
}

// Resolve fetches the payload of an event whose payload was stored apart
// (PayloadRef) and checks it against its digest. Events with their
// payload inline are left as they are.
func (s *Store) Resolve(ctx context.Context, rec *Recorded) error {
	if rec.PayloadRef == nil || (len(rec.Payload) > 0 && string(rec.Payload) != "null") {
		return nil
	}
	ref := rec.PayloadRef
	if !strings.HasPrefix(ref.Digest, "sha256-") {
		return fmt.Errorf("event %s #%d: payload reference %q: %w", rec.Type, rec.Seq, ref.Digest, ErrBlob)
	}
	b, err := s.blobs(ctx)
	if err != nil {
		return err
	}
	data, err := b.GetBytes(ctx, ref.Digest)
	if err != nil {
		if errors.Is(err, jetstream.ErrObjectNotFound) {
			return fmt.Errorf("event %s #%d: payload %s is missing: %w", rec.Type, rec.Seq, ref.Digest, ErrBlob)
		}
		return fmt.Errorf("event %s #%d: fetch payload %s: %w", rec.Type, rec.Seq, ref.Digest, err)
	}
	if int64(len(data)) != ref.Size || blobDigest(data) != ref.Digest {
		return fmt.Errorf("event %s #%d: payload %s does not match its digest: %w", rec.Type, rec.Seq, ref.Digest, ErrBlob)
	}
	rec.Payload = json.RawMessage(data)
	return nil
}

// resolveAll resolves the payloads of recs in place.
func (s *Store) resolveAll(ctx context.Context, recs []Recorded) error {
	for i := range recs {
		if err := s.Resolve(ctx, &recs[i]); err != nil {
			return err
		}
	}
	return nil
}
