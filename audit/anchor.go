package audit

import (
	"bufio"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/events"
)

// Anchors pin the log's heads outside the log. A chain proves the log is
// consistent with itself; someone who may write the streams can still
// drop an aggregate's newest events, or delete a stream and republish a
// consistent part of it. An anchor records, per stream, the last sequence
// and the hash of the last event: a log that no longer holds them lost
// events. The server records one in <data>/audit/anchors.jsonl at start,
// every AnchorInterval and at close, each keyed with an HMAC under a key
// kept in <data>/audit/anchor.key (random, created on first start, never
// sent over NATS): NATS credentials alone can neither forge nor alter
// one. `audit verify --witness FILE` keeps the heads where an auditor
// holds them.

// AnchorInterval is how often a running server records an anchor (when
// the heads changed).
const AnchorInterval = time.Minute

// AnchorHead is one stream's head.
type AnchorHead struct {
	Stream string `json:"stream"`
	// LastSeq is the stream's last sequence.
	LastSeq uint64 `json:"last_seq"`
	// Seq and Hash are the last event's sequence and events.Hash (timers,
	// which the server deletes when they fire, are skipped).
	Seq  uint64 `json:"seq,omitempty"`
	Hash string `json:"hash,omitempty"`
}

// Anchor is the log's heads at a time: an anchor line (with its MAC) or a
// witness file (without).
type Anchor struct {
	Time  time.Time    `json:"time"`
	Heads []AnchorHead `json:"heads"`
	// Digest is "sha256-" + the SHA-256 of the heads (HeadsDigest).
	Digest string `json:"digest"`
	// Aggregates are the newest events of the aggregates the log changed
	// since the previous anchor (an anchor line; see changedAggregates),
	// at most MaxAnchorAggregates: AggregatesOmitted counts the others.
	Aggregates        []AggregateHead `json:"aggregates,omitempty"`
	AggregatesOmitted int             `json:"aggregates_omitted,omitempty"`
	// AggregatesDigest is the digest of Aggregates ("" without them).
	AggregatesDigest string `json:"aggregates_digest,omitempty"`
	// MAC is the hex HMAC-SHA256 of time, digest and aggregates digest
	// under the server's anchor key.
	MAC string `json:"mac,omitempty"`
}

// HeadsDigest is the digest of heads: what an auditor compares.
func HeadsDigest(heads []AnchorHead) string {
	h := sha256.New()
	for _, hd := range heads {
		fmt.Fprintf(h, "%s %d %d %s\n", hd.Stream, hd.LastSeq, hd.Seq, hd.Hash)
	}
	return "sha256-" + hex.EncodeToString(h.Sum(nil))
}

// AnchorKeyPath is where a data directory keeps its anchor key.
func AnchorKeyPath(dataDir string) string { return filepath.Join(dataDir, "audit", "anchor.key") }

// AnchorsPath is where a data directory keeps its anchors.
func AnchorsPath(dataDir string) string { return filepath.Join(dataDir, "audit", "anchors.jsonl") }

// AnchorKey reads the anchor key of dataDir, creating it (32 random
// bytes, hex, mode 0600) when create is set and it does not exist.
func AnchorKey(dataDir string, create bool) ([]byte, error) {
	path := AnchorKeyPath(dataDir)
	key, err := ReadAnchorKey(path)
	if err == nil || !create || !errors.Is(err, fs.ErrNotExist) {
		return key, err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("anchor key: %w", err)
	}
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		return nil, fmt.Errorf("anchor key: %w", err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return ReadAnchorKey(path)
	}
	if err != nil {
		return nil, fmt.Errorf("anchor key: %w", err)
	}
	if _, err := f.WriteString(hex.EncodeToString(raw) + "\n"); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("anchor key: %w", err)
	}
	if err := f.Close(); err != nil {
		return nil, fmt.Errorf("anchor key: %w", err)
	}
	return raw, nil
}

// ReadAnchorKey reads an anchor key file (hex).
func ReadAnchorKey(path string) ([]byte, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, &trellis.Error{Code: trellis.CodeInvalid, Field: "anchor_key", Message: err.Error(), Err: err}
	}
	key, err := hex.DecodeString(strings.TrimSpace(string(data)))
	if err != nil || len(key) < 16 {
		return nil, trellis.FieldError("anchor_key", "%s is not an anchor key (hex, at least 16 bytes)", path)
	}
	return key, nil
}

// anchorMAC is the MAC of an anchor's time, digest and aggregates
// digest (an anchor without aggregates keeps its earlier MAC).
func anchorMAC(key []byte, t time.Time, digest, aggregates string) string {
	m := hmac.New(sha256.New, key)
	fmt.Fprintf(m, "trellis-anchor %s %s", t.UTC().Format(time.RFC3339Nano), digest)
	if aggregates != "" {
		fmt.Fprintf(m, " %s", aggregates)
	}
	return hex.EncodeToString(m.Sum(nil))
}

// exportMAC is the MAC of an export's digest.
func exportMAC(key []byte, digest string) string {
	m := hmac.New(sha256.New, key)
	fmt.Fprintf(m, "trellis-export %s", digest)
	return hex.EncodeToString(m.Sum(nil))
}

// ReadHeads reads every domain stream's head now.
func ReadHeads(ctx context.Context, store *events.Store) (*Anchor, error) {
	a := &Anchor{Time: time.Now().UTC()}
	for _, spec := range events.Streams() {
		info, err := store.StreamInfo(ctx, spec.Name)
		if errors.Is(err, jetstream.ErrStreamNotFound) {
			a.Heads = append(a.Heads, AnchorHead{Stream: spec.Name})
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("heads: %w", err)
		}
		hd := AnchorHead{Stream: spec.Name, LastSeq: info.State.LastSeq}
		for seq, n := info.State.LastSeq, 0; seq >= max(info.State.FirstSeq, 1) && seq > 0 && n < 256; seq, n = seq-1, n+1 {
			rec, err := store.Get(ctx, spec.Name, seq)
			if errors.Is(err, events.ErrNotFound) || (err == nil && isTimerSubject(rec.Subject)) {
				continue
			}
			if err != nil {
				break
			}
			hd.Seq, hd.Hash = seq, events.Hash(rec.Envelope)
			break
		}
		a.Heads = append(a.Heads, hd)
	}
	a.Digest = HeadsDigest(a.Heads)
	return a, nil
}

// RecordAnchor reads the heads and appends them, keyed, to dataDir's
// anchors (not when they equal the last anchor's).
func RecordAnchor(ctx context.Context, store *events.Store, dataDir string) (*Anchor, error) {
	key, err := AnchorKey(dataDir, true)
	if err != nil {
		return nil, err
	}
	a, err := ReadHeads(ctx, store)
	if err != nil {
		return nil, err
	}
	last, err := lastAnchor(AnchorsPath(dataDir))
	if err != nil {
		return nil, err
	}
	if last != nil && last.Digest == a.Digest {
		return last, nil
	}
	if a.Aggregates, a.AggregatesOmitted, err = changedAggregates(ctx, store, last, a.Heads); err != nil {
		return nil, err
	}
	a.AggregatesDigest = aggregatesDigest(a.Aggregates)
	a.MAC = anchorMAC(key, a.Time, a.Digest, a.AggregatesDigest)
	line, err := json.Marshal(a)
	if err != nil {
		return nil, err
	}
	f, err := os.OpenFile(AnchorsPath(dataDir), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("record anchor: %w", err)
	}
	_, err = f.Write(append(line, '\n'))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, fmt.Errorf("record anchor: %w", err)
	}
	return a, nil
}

// maxAnchorLine bounds one anchor line (its aggregate heads included).
const maxAnchorLine = 1 << 20

// lastAnchor reads the last line of an anchors file (nil when there is
// none), reading only the file's tail.
func lastAnchor(path string) (*Anchor, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("anchors: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("anchors: %w", err)
	}
	off := max(0, fi.Size()-maxAnchorLine)
	buf := make([]byte, fi.Size()-off)
	if _, err := f.ReadAt(buf, off); err != nil {
		return nil, fmt.Errorf("anchors: %w", err)
	}
	lines := strings.Split(strings.TrimSpace(string(buf)), "\n")
	var a Anchor
	if json.Unmarshal([]byte(lines[len(lines)-1]), &a) != nil {
		return nil, nil
	}
	return &a, nil
}

// ReadAnchors reads an anchors file (none when it does not exist). A line
// that does not parse is returned as an anchor without heads, which
// verify reports.
func ReadAnchors(path string) ([]Anchor, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("anchors: %w", err)
	}
	defer f.Close()
	var out []Anchor
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), maxAnchorLine+1)
	for sc.Scan() {
		var a Anchor
		if json.Unmarshal(sc.Bytes(), &a) != nil {
			a = Anchor{Digest: "unreadable"}
		}
		out = append(out, a)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("anchors: %w", err)
	}
	return out, nil
}

// ReadWitness reads a witness file written by verify --witness.
func ReadWitness(path string) (*Anchor, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var a Anchor
	if err := json.Unmarshal(data, &a); err != nil || a.Digest == "" {
		return nil, trellis.FieldError("witness", "%s is not a witness file written by audit verify --witness", path)
	}
	return &a, nil
}

// WriteWitness writes the heads to path (a new file).
func WriteWitness(path string, a *Anchor) error {
	w := *a
	w.MAC = ""
	data, err := json.MarshalIndent(w, "", "  ")
	if err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return trellis.FieldError("witness", "%v", err)
	}
	_, err = f.Write(append(data, '\n'))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// anchorIntact reports whether a matches its digests and, with key, its
// MAC.
func anchorIntact(a Anchor, key []byte) bool {
	return a.Digest == HeadsDigest(a.Heads) && a.AggregatesDigest == aggregatesDigest(a.Aggregates) &&
		(key == nil || hmac.Equal([]byte(a.MAC), []byte(anchorMAC(key, a.Time, a.Digest, a.AggregatesDigest))))
}

// checkAnchor compares the log with an anchor (or a witness: no MAC
// expected, key nil) and returns what it lost.
func checkAnchor(ctx context.Context, store *events.Store, a Anchor, key []byte, what string, pruned map[string]*events.SeqRanges) ([]Finding, error) {
	var out []Finding
	at := a.Time.UTC().Format(time.RFC3339)
	if !anchorIntact(a, key) {
		return []Finding{{Kind: FindingAltered, Detail: fmt.Sprintf("%s of %s does not match its digest or its MAC: it was forged or altered", what, at)}}, nil
	}
	for _, hd := range a.Heads {
		if hd.LastSeq == 0 {
			continue
		}
		info, err := store.StreamInfo(ctx, hd.Stream)
		if errors.Is(err, jetstream.ErrStreamNotFound) {
			continue // reported by the walk
		}
		if err != nil {
			return nil, err
		}
		f := Finding{Kind: FindingRemoved, Stream: hd.Stream, Seq: hd.Seq}
		switch {
		case info.State.LastSeq < hd.LastSeq:
			f.Detail = fmt.Sprintf("%s of %s says the stream ran up to #%d; it now ends at #%d: its newest events were dropped (or the stream was deleted and refilled)", what, at, hd.LastSeq, info.State.LastSeq)
			f.Seq, f.ToSeq = info.State.LastSeq+1, hd.LastSeq
		case !info.Created.IsZero() && info.Created.After(a.Time):
			f.Detail = fmt.Sprintf("the stream was created at %s, after %s of %s: it was deleted and recreated", info.Created.UTC().Format(time.RFC3339), what, at)
		case hd.Seq > 0:
			rec, err := store.Get(ctx, hd.Stream, hd.Seq)
			switch {
			case errors.Is(err, events.ErrNotFound) && pruned[hd.Stream].Covers(hd.Seq, hd.Seq):
				// Pruned: a prune record accounts for it (its archive holds it).
			case errors.Is(err, events.ErrNotFound):
				f.Detail = fmt.Sprintf("%s of %s names #%d as the stream's last event; the log no longer holds it", what, at, hd.Seq)
			case err != nil && !errors.Is(err, events.ErrBadEvent) && !errors.Is(err, events.ErrBlob):
				return nil, err
			case err != nil || events.Hash(rec.Envelope) != hd.Hash:
				f.Kind, f.Detail = FindingAltered, fmt.Sprintf("%s of %s names #%d (hash %s) as the stream's last event; the log holds another event there", what, at, hd.Seq, short(hd.Hash))
			}
		}
		if f.Detail != "" {
			out = append(out, f)
		}
	}
	return out, nil
}

// anchorLoop records an anchor every interval until stopped, and once
// more when stopped.
type anchorLoop struct {
	stop chan struct{}
	done sync.WaitGroup
}

func startAnchorLoop(store *events.Store, dataDir string, every time.Duration, log *slog.Logger) *anchorLoop {
	l := &anchorLoop{stop: make(chan struct{})}
	record := func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := RecordAnchor(ctx, store, dataDir); err != nil && log != nil {
			log.Warn("audit anchor not recorded", "err", err)
		}
	}
	l.done.Add(1)
	go func() {
		defer l.done.Done()
		record()
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-l.stop:
				record()
				return
			case <-t.C:
				record()
			}
		}
	}()
	return l
}

func (l *anchorLoop) close() {
	if l == nil {
		return
	}
	close(l.stop)
	l.done.Wait()
}
