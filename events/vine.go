package events

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
	"strings"
	"unsafe"

	"github.com/trellis/trellis/vine"
)

// VINE graph event types: the last token of trellis.vine.<graph_id>.<type>.
const (
	// GraphImported records a .vine file taken under Trellis's care: the
	// whole graph, canonically serialized.
	GraphImported = "imported"
	// GraphBatchApplied records one atomic batch of mutations (vine write,
	// a claim, a status change).
	GraphBatchApplied = "batch_applied"
	// GraphExpanded records the expansion of a reference node with the
	// child graph it inlined.
	GraphExpanded = "expanded"
	// GraphHandEdited records a change made to the file by hand, detected
	// before a command ran: the whole graph as the file then held it.
	GraphHandEdited = "hand_edited"
)

// VineSchema is the current schema version of every VINE payload.
const VineSchema = 1

// VineSubject is the subject of a graph event.
func VineSubject(graphID, typ string) string { return "trellis.vine." + graphID + "." + typ }

// GraphFilter is the subject filter of one graph aggregate.
func GraphFilter(graphID string) string { return "trellis.vine." + graphID + ".>" }

// GraphID derives a graph's id from its file path relative to the
// workspace root: "g" and 20 hex digits of SHA-256. Machines that share a
// workspace layout agree on the id.
func GraphID(relPath string) string {
	sum := sha256.Sum256([]byte(strings.TrimPrefix(relPath, "./")))
	return "g" + hex.EncodeToString(sum[:10])
}

// IsGraphID reports whether s has the form of a graph id ("g" + 20 hex).
func IsGraphID(s string) bool {
	if len(s) != 21 || s[0] != 'g' {
		return false
	}
	for _, r := range s[1:] {
		if !strings.ContainsRune("0123456789abcdef", r) {
			return false
		}
	}
	return true
}

// GraphSnapshotPayload is the payload of imported and hand_edited events:
// the graph's canonical text, gzip-compressed and base64-encoded so large
// graphs fit in one message.
type GraphSnapshotPayload struct {
	Path   string `json:"path"`
	TextGz string `json:"text_gz"`
	Hash   string `json:"hash"`
	Nodes  int    `json:"nodes"`
	// NoticedBy is the actor whose command found a hand edit (the event's
	// actor is then "hand-edit").
	NoticedBy string `json:"noticed_by,omitempty"`
	// Conflicts are the hand edits that could not be merged: the log's
	// version was kept for them.
	Conflicts []vine.MergeConflict `json:"conflicts,omitempty"`
}

// GraphBatchPayload is the payload of a batch_applied event. Hash is the
// TextHash of the graph's canonical text after the batch.
type GraphBatchPayload struct {
	Ops     []vine.Op `json:"ops"`
	Summary string    `json:"summary"`
	Hash    string    `json:"hash,omitempty"`
}

// GraphExpandedPayload is the payload of an expanded event: the child
// graph's text, and Hash, the TextHash of the parent's canonical text
// after the expansion.
type GraphExpandedPayload struct {
	RefID     string `json:"ref_id"`
	ChildPath string `json:"child_path"`
	TextGz    string `json:"text_gz"`
	Hash      string `json:"hash,omitempty"`
}

// ResultHash returns the hash of the graph's canonical text after rec,
// as recorded in the event ("" when the event does not say). Every process
// that writes the .vine file writes that text, so the hashes in the log
// tell a file some writer produced from a hand edit.
func ResultHash(rec Recorded) string {
	var p struct {
		Hash string `json:"hash"`
	}
	if rec.DecodePayload(&p) != nil {
		return ""
	}
	return p.Hash
}

// TextHash is the hash recorded for a canonical text.
func TextHash(text string) string {
	// The text is hashed where it is, not copied first (it may be
	// megabytes, hashed on every VINE change): Sum256 only reads it.
	sum := sha256.Sum256(unsafe.Slice(unsafe.StringData(text), len(text)))
	return hex.EncodeToString(sum[:16])
}

// Compress gzips and base64-encodes text.
func Compress(text string) (string, error) {
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestSpeed)
	if err != nil {
		return "", err
	}
	if _, err := io.WriteString(zw, text); err != nil {
		return "", err
	}
	if err := zw.Close(); err != nil {
		return "", err
	}
	return base64.StdEncoding.EncodeToString(buf.Bytes()), nil
}

// Decompress reverses Compress.
func Decompress(s string) (string, error) {
	raw, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return "", fmt.Errorf("decode snapshot: %w", err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(raw))
	if err != nil {
		return "", fmt.Errorf("decompress snapshot: %w", err)
	}
	out, err := io.ReadAll(io.LimitReader(zr, 256<<20))
	if err != nil {
		return "", fmt.Errorf("decompress snapshot: %w", err)
	}
	return string(out), nil
}

// GraphState is a graph aggregate folded from its events.
type GraphState struct {
	GraphID string
	Path    string
	Graph   vine.Graph
	// Events counts the events folded.
	Events int
	// Hash is the TextHash of Graph's canonical text when the last event
	// recorded it (empty for older events): a file holding exactly the
	// current state is recognised without comparing graphs.
	Hash string
}

// ApplyGraph folds one graph event into st (nil before the first) and
// returns the new state. It is the single definition of what each VINE
// event means, for the command side and the projections alike. Batches are
// replayed through vine.Apply, which is deterministic.
func ApplyGraph(st *GraphState, rec Recorded) (*GraphState, error) {
	if rec.Schema > VineSchema {
		return st, fmt.Errorf("event %s: schema %d is newer than this build understands (%d)", rec.ID, rec.Schema, VineSchema)
	}
	switch rec.Type {
	case GraphImported, GraphHandEdited:
		var p GraphSnapshotPayload
		if err := rec.DecodePayload(&p); err != nil {
			return st, err
		}
		text, err := Decompress(p.TextGz)
		if err != nil {
			return st, err
		}
		g, err := vine.Parse(text)
		if err != nil {
			return st, fmt.Errorf("event %s: stored graph does not parse: %w: %w", rec.ID, ErrBadEvent, err)
		}
		next := &GraphState{GraphID: rec.AggregateID, Path: p.Path, Graph: g, Hash: p.Hash}
		if st != nil {
			next.Events = st.Events
			if p.Path == "" {
				next.Path = st.Path
			}
		}
		next.Events++
		return next, nil
	}
	if st == nil {
		return nil, fmt.Errorf("event %s (%s) precedes its graph's import: %w", rec.ID, rec.Type, ErrBadEvent)
	}
	switch rec.Type {
	case GraphBatchApplied:
		var p GraphBatchPayload
		if err := rec.DecodePayload(&p); err != nil {
			return st, err
		}
		res, err := vine.Apply(st.Graph, p.Ops)
		if err != nil {
			return st, fmt.Errorf("event %s: batch no longer applies: %w: %w", rec.ID, ErrBadEvent, err)
		}
		return &GraphState{GraphID: st.GraphID, Path: st.Path, Graph: res.Graph, Events: st.Events + 1, Hash: p.Hash}, nil
	case GraphExpanded:
		var p GraphExpandedPayload
		if err := rec.DecodePayload(&p); err != nil {
			return st, err
		}
		text, err := Decompress(p.TextGz)
		if err != nil {
			return st, err
		}
		child, err := vine.Parse(text)
		if err != nil {
			return st, fmt.Errorf("event %s: stored child graph does not parse: %w", rec.ID, err)
		}
		g, err := vine.Expand(st.Graph, p.RefID, child)
		if err != nil {
			return st, fmt.Errorf("event %s: expansion no longer applies: %w: %w", rec.ID, ErrBadEvent, err)
		}
		return &GraphState{GraphID: st.GraphID, Path: st.Path, Graph: g, Events: st.Events + 1, Hash: p.Hash}, nil
	}
	return st, nil // unknown types are ignored so newer writers do not break older readers
}

// TouchesTask reports whether a graph event concerns the task id: the
// snapshots and expansions concern every task; a batch concerns the tasks
// its operations name.
func TouchesTask(rec Recorded, id string) bool {
	if rec.Type != GraphBatchApplied {
		return true
	}
	var p GraphBatchPayload
	if rec.DecodePayload(&p) != nil {
		return false
	}
	for _, op := range p.Ops {
		if op.ID == id || op.TaskID == id || op.DepID == id {
			return true
		}
	}
	return false
}
