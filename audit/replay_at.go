package audit

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/command"
	"github.com/trellis/trellis/events"
	"github.com/trellis/trellis/projections"
)

// Point is a point of the log: a time, or a sequence of one stream.
type Point struct {
	// Time, when set, is the point: every stream as it stood then.
	Time time.Time
	// Stream and Seq, when Time is zero, are the point: that stream up to
	// and including Seq, and every other stream as it stood when the log
	// stored that event.
	Stream string
	Seq    uint64
}

// ParsePoint reads a point of the log: a time (as trellis.ParseTimeArg
// takes it), a sequence of TRELLIS_QUEUE (1234), or STREAM:SEQ
// (TRELLIS_VINE:55, vine:55). field names the argument in errors.
func ParsePoint(field, s string, now time.Time) (Point, error) {
	if s == "" {
		return Point{}, trellis.FieldError(field, "must not be empty: give a time (RFC 3339, a date, or a duration ago) or a sequence ([STREAM:]SEQ)")
	}
	stream, seqText, scoped := strings.Cut(s, ":")
	if !scoped {
		stream, seqText = events.StreamQueue, s
	}
	if seq, err := strconv.ParseUint(seqText, 10, 64); err == nil {
		if seq == 0 {
			return Point{}, trellis.FieldError(field, "sequences start at 1 (got 0)")
		}
		name, err := ValidStream(field, stream)
		if err != nil {
			return Point{}, err
		}
		return Point{Stream: name, Seq: seq}, nil
	}
	t, err := trellis.ParseTimeArg(field, s, now)
	if err != nil {
		return Point{}, trellis.FieldError(field, "%q is neither a time (RFC 3339 2026-01-02T15:04:05Z, a date 2026-01-02, a duration ago 90m) nor a sequence ([STREAM:]SEQ, e.g. 1234 or TRELLIS_VINE:55)", s)
	}
	return Point{Time: t}, nil
}

// Cut is the log as of a point: each domain stream's last sequence then.
type Cut struct {
	// At is the point's time (for a sequence: when the log stored it).
	At time.Time `json:"at"`
	// Streams maps each domain stream to its last sequence as of the
	// point (0: the stream held nothing yet).
	Streams map[string]uint64 `json:"streams"`
}

// ResolvePoint returns the cut of the log at p. A sequence the stream does
// not hold (deleted, or past its end) is not found.
func ResolvePoint(ctx context.Context, store *events.Store, p Point) (*Cut, error) {
	cut := &Cut{At: p.Time, Streams: map[string]uint64{}}
	if p.Time.IsZero() {
		var found bool
		err := store.Scan(ctx, p.Stream, events.ScanRange{From: p.Seq, To: p.Seq}, func(m events.Message) error {
			found, cut.At = true, m.Stored.UTC()
			return nil
		})
		if err != nil {
			return nil, command.StoreError("resolve "+p.Stream, err)
		}
		if !found {
			last, err := store.LastSeq(ctx, p.Stream)
			if err != nil {
				return nil, command.StoreError("resolve "+p.Stream, err)
			}
			return nil, trellis.Errorf(trellis.CodeNotFound, "%s holds no event #%d (its last sequence is #%d; a deleted event cannot be a point)", p.Stream, p.Seq, last)
		}
	}
	if err := archivedAt(ctx, store, cut.At, "the point"); err != nil {
		return nil, err
	}
	for _, spec := range events.Streams() {
		if spec.Name == p.Stream {
			cut.Streams[spec.Name] = p.Seq
			continue
		}
		seq, err := store.SeqAtTime(ctx, spec.Name, cut.At)
		if err != nil {
			return nil, command.StoreError("resolve "+spec.Name, err)
		}
		cut.Streams[spec.Name] = seq
	}
	return cut, nil
}

// AsOfCacheSize bounds the boards BoardAt keeps under its cache directory.
const AsOfCacheSize = 4

// BoardAt returns the queue board as of time t, read only, and the
// sequence of TRELLIS_QUEUE it stands at; close the board when done. The
// boards are cached under cacheDir (the data dir's asof/), one directory
// per cut of the stream, named by the cut's sequence and the id of the
// event there, so a cache never answers for another log. A miss folds the
// stream into a copy of the nearest earlier cached board of the same log
// (or from the start): the first query of a point costs a replay up to
// it, a later point costs the events since the nearest cached one, and a
// repeated one costs nothing. At most AsOfCacheSize boards are kept (the
// least recently used go first).
func BoardAt(ctx context.Context, store *events.Store, t time.Time, cacheDir string) (*projections.Board, uint64, error) {
	if err := archivedAt(ctx, store, t, "as of"); err != nil {
		return nil, 0, err
	}
	seq, err := store.SeqAtTime(ctx, events.StreamQueue, t)
	if err != nil {
		return nil, 0, command.StoreError("as of", err)
	}
	key := func(seq uint64) (string, error) {
		if seq == 0 {
			return "board-0", nil
		}
		id := ""
		err := store.Scan(ctx, events.StreamQueue, events.ScanRange{From: seq, To: seq}, func(m events.Message) error {
			id = m.ID
			return nil
		})
		if err != nil {
			return "", command.StoreError("as of", err)
		}
		if id == "" {
			id = "none"
		}
		return fmt.Sprintf("board-%d-%s", seq, id), nil
	}
	name, err := key(seq)
	if err != nil {
		return nil, 0, err
	}
	if err := os.MkdirAll(cacheDir, 0o755); err != nil {
		return nil, 0, trellis.Errorf(trellis.CodeInternal, "as of: %w", err)
	}
	final := filepath.Join(cacheDir, name)
	if _, err := os.Stat(final); err != nil {
		if err := buildBoardAt(ctx, store, cacheDir, final, seq, key); err != nil {
			return nil, 0, err
		}
		pruneAsOf(cacheDir, AsOfCacheSize)
	}
	now := time.Now()
	_ = os.Chtimes(final, now, now) // recently used
	b, at, err := projections.OpenBoardReadOnly(final)
	if err != nil {
		return nil, 0, trellis.Errorf(trellis.CodeInternal, "as of: %w (delete %s to rebuild it)", err, final)
	}
	if at != seq {
		_ = b.Close()
		return nil, 0, trellis.Errorf(trellis.CodeInternal, "as of: the cached board %s stands at #%d, not #%d (delete it to rebuild it)", final, at, seq)
	}
	return b, seq, nil
}

// buildBoardAt folds a board up to seq into a temporary directory, from
// the nearest cached earlier board of the same log, and renames it into
// place.
func buildBoardAt(ctx context.Context, store *events.Store, cacheDir, final string, seq uint64, key func(uint64) (string, error)) error {
	tmp, err := os.MkdirTemp(cacheDir, ".build-")
	if err != nil {
		return trellis.Errorf(trellis.CodeInternal, "as of: %w", err)
	}
	defer os.RemoveAll(tmp)
	if base := nearestAsOf(cacheDir, seq, key); base != "" {
		if err := copyFile(filepath.Join(base, "board.db"), filepath.Join(tmp, "board.db")); err != nil {
			return trellis.Errorf(trellis.CodeInternal, "as of: %w", err)
		}
	}
	board := projections.NewBoard(tmp)
	if _, err := projections.FoldTo(ctx, store, board, seq, nil); err != nil {
		_ = board.Close()
		return command.StoreError("as of", err)
	}
	if err := board.Close(); err != nil {
		return trellis.Errorf(trellis.CodeInternal, "as of: %w", err)
	}
	if err := os.Rename(tmp, final); err != nil {
		if _, statErr := os.Stat(final); statErr == nil {
			return nil // another process built it meanwhile
		}
		return trellis.Errorf(trellis.CodeInternal, "as of: %w", err)
	}
	return nil
}

// nearestAsOf returns the cached board with the highest cut below seq
// that belongs to this log (the event at its cut has the id in its name),
// or "".
func nearestAsOf(cacheDir string, seq uint64, key func(uint64) (string, error)) string {
	entries, err := os.ReadDir(cacheDir)
	if err != nil {
		return ""
	}
	type cand struct {
		seq  uint64
		name string
	}
	var cands []cand
	for _, e := range entries {
		parts := strings.SplitN(e.Name(), "-", 3)
		if len(parts) != 3 || parts[0] != "board" || !e.IsDir() {
			continue
		}
		if s, err := strconv.ParseUint(parts[1], 10, 64); err == nil && s > 0 && s < seq {
			cands = append(cands, cand{s, e.Name()})
		}
	}
	slices.SortFunc(cands, func(a, b cand) int { return -cmpUint(a.seq, b.seq) })
	for _, c := range cands {
		if want, err := key(c.seq); err == nil && want == c.name {
			return filepath.Join(cacheDir, c.name)
		}
	}
	return ""
}

func cmpUint(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// pruneAsOf removes the least recently used cached boards beyond keep.
func pruneAsOf(cacheDir string, keep int) {
	entries, err := os.ReadDir(cacheDir)
	if err != nil {
		return
	}
	type aged struct {
		name string
		at   time.Time
	}
	var boards []aged
	for _, e := range entries {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), "board-") {
			continue
		}
		if info, err := e.Info(); err == nil {
			boards = append(boards, aged{e.Name(), info.ModTime()})
		}
	}
	if len(boards) <= keep {
		return
	}
	slices.SortFunc(boards, func(a, b aged) int { return b.at.Compare(a.at) })
	for _, b := range boards[keep:] {
		_ = os.RemoveAll(filepath.Join(cacheDir, b.name))
	}
}

// copyFile copies src to dst.
func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		_ = out.Close()
		return err
	}
	return out.Close()
}
