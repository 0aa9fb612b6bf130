package retention

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/trellis/trellis/audit"
	"github.com/trellis/trellis/events"
	"github.com/trellis/trellis/projections"
)

// archive is one archive file written and synced.
type archive struct {
	name    string // base name in the archive directory
	path    string
	digest  string
	events  int
	bytes   int64
	removed events.SeqRanges // the events and fired timers it accounts for
}

// writeArchive writes the events of tasks (in stream order) to
// dir/name in the audit export format: a header naming the queue stream's
// range from the first to the last sequence archived, an event line per
// event, a gap line per fired timer of the tasks (right after the event of
// its batch, so verify --file accounts for it), an omitted line for every
// range in between that stays in the live log or was archived before, and
// the trailer. The file is written beside its name, synced, renamed into
// place and the directory synced: when it returns, the archive is durable.
func writeArchive(dir, name string, firstSeq uint64, tasks []*candidate) (*archive, error) {
	return writeArchiveOf(dir, name, events.StreamQueue, firstSeq, tasks)
}

// writeArchiveOf is writeArchive for the aggregates of any stream.
func writeArchiveOf(dir, name, stream string, firstSeq uint64, tasks []*candidate) (*archive, error) {
	type item struct {
		seq   uint64
		msg   *events.Message
		timer bool
	}
	var items []item
	a := &archive{name: name, path: filepath.Join(dir, name)}
	for _, c := range tasks {
		for i := range c.msgs {
			items = append(items, item{seq: c.msgs[i].Seq, msg: &c.msgs[i]})
			a.removed.Add(c.msgs[i].Seq, c.msgs[i].Seq)
		}
		for _, s := range c.timers {
			items = append(items, item{seq: s, timer: true})
			a.removed.Add(s, s)
		}
	}
	if len(items) == 0 {
		return nil, fmt.Errorf("archive %s: nothing to archive", name)
	}
	slices.SortFunc(items, func(x, y item) int {
		switch {
		case x.seq < y.seq:
			return -1
		case x.seq > y.seq:
			return 1
		}
		return 0
	})
	f, err := os.CreateTemp(dir, "."+name+".*.tmp")
	if err != nil {
		return nil, fmt.Errorf("write archive %s: %w", a.path, err)
	}
	tmp := f.Name()
	defer func() { _ = os.Remove(tmp) }() // after the rename: nothing
	bw := bufio.NewWriterSize(f, 256<<10)
	h := sha256.New()
	lines := 0
	write := func(v any) error {
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(v); err != nil {
			return err
		}
		h.Write(buf.Bytes())
		lines++
		a.bytes += int64(buf.Len())
		_, err := bw.Write(buf.Bytes())
		return err
	}
	from, to := items[0].seq, items[len(items)-1].seq
	hdr := audit.ExportHeader{Format: audit.ExportFormat, Created: time.Now().UTC(),
		Streams: []audit.ExportStream{{Stream: stream, From: from, To: to, FirstSeq: firstSeq}}}
	if err := write(hdr); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("write archive %s: %w", a.path, err)
	}
	expect := from
	for _, it := range items {
		if it.seq > expect {
			if err := write(audit.ExportLine{Stream: stream, Omitted: &[2]uint64{expect, it.seq - 1}}); err != nil {
				_ = f.Close()
				return nil, fmt.Errorf("write archive %s: %w", a.path, err)
			}
		}
		expect = it.seq + 1
		var l audit.ExportLine
		if it.timer {
			l = audit.ExportLine{Stream: stream, Gap: &[2]uint64{it.seq, it.seq}}
		} else {
			m := it.msg
			stored := m.Stored.UTC()
			env := m.Envelope
			env.PayloadRef = nil // inline: the archive stands alone
			l = audit.ExportLine{Stream: stream, Seq: m.Seq, Subject: m.Subject, Stored: &stored, MsgID: m.MsgID,
				Scheduler: m.Scheduler, BatchID: m.BatchID, BatchSeq: m.BatchSeq, Event: &env, Hash: events.Hash(env)}
			a.events++
		}
		if err := write(l); err != nil {
			_ = f.Close()
			return nil, fmt.Errorf("write archive %s: %w", a.path, err)
		}
	}
	var tr audit.ExportTrailer
	tr.Trailer.Lines, tr.Trailer.Events = lines, a.events
	tr.Trailer.Digest = "sha256-" + hex.EncodeToString(h.Sum(nil))
	a.digest = tr.Trailer.Digest
	if err := write(tr); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("write archive %s: %w", a.path, err)
	}
	if err := bw.Flush(); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("write archive %s: %w", a.path, err)
	}
	if err := f.Sync(); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("sync archive %s: %w", a.path, err)
	}
	if err := f.Close(); err != nil {
		return nil, fmt.Errorf("write archive %s: %w", a.path, err)
	}
	if err := os.Rename(tmp, a.path); err != nil {
		return nil, fmt.Errorf("write archive %s: %w", a.path, err)
	}
	if err := projections.SyncDir(dir); err != nil {
		return nil, fmt.Errorf("sync archive directory %s: %w", dir, err)
	}
	return a, nil
}
