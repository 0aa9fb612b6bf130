package handlers

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"

	bolt "go.etcd.io/bbolt"
)

// headStore keeps the last event of every aggregate a chain check has
// seen: at most size in memory (the most recently used), the rest spilled
// to a temporary bbolt file, so the check's heap is bounded whatever the
// number of aggregates and it never reads an aggregate back from the log
// to learn what it already saw. Close removes the file.
type headStore struct {
	mem     *lru[string, *chainHead]
	pending map[string]*chainHead // dropped from memory, not yet written
	dir     string
	db      *bolt.DB
	batch   int   // heads written per transaction
	err     error // the first spill failure
}

// spillBatch is how many dropped heads are written in one transaction (at
// most the memory bound, so a small bound exercises the file at once).
const spillBatch = 4096

var bucketHeads = []byte("heads")

func newHeadStore(size int) *headStore {
	h := &headStore{mem: newLRU[string, *chainHead](size), pending: map[string]*chainHead{}, batch: max(1, min(spillBatch, size))}
	h.mem.evicted = func(k string, v *chainHead) {
		h.pending[k] = v
		if len(h.pending) >= h.batch {
			h.flush()
		}
	}
	return h
}

// get returns the head of key, if the check has seen the aggregate.
func (h *headStore) get(key string) (*chainHead, bool, error) {
	if v, ok := h.mem.get(key); ok {
		return v, true, nil
	}
	if v, ok := h.pending[key]; ok {
		return v, true, nil
	}
	if h.err != nil {
		return nil, false, h.err
	}
	if h.db == nil {
		return nil, false, nil
	}
	var out *chainHead
	err := h.db.View(func(tx *bolt.Tx) error {
		if data := tx.Bucket(bucketHeads).Get([]byte(key)); data != nil {
			out = decodeHead(data)
		}
		return nil
	})
	if err != nil {
		return nil, false, fmt.Errorf("verify: read spilled heads: %w", err)
	}
	return out, out != nil, nil
}

// put records the head of key.
func (h *headStore) put(key string, v *chainHead) error {
	delete(h.pending, key)
	h.mem.put(key, v)
	return h.err
}

// flush writes the pending heads to the spill file.
func (h *headStore) flush() {
	if h.err != nil || len(h.pending) == 0 {
		return
	}
	if h.db == nil {
		dir, err := os.MkdirTemp("", "trellis-verify-")
		if err != nil {
			h.err = fmt.Errorf("verify: spill heads: %w", err)
			return
		}
		db, err := bolt.Open(filepath.Join(dir, "heads.db"), 0o600, &bolt.Options{NoSync: true, NoFreelistSync: true, FreelistType: bolt.FreelistMapType})
		if err != nil {
			_ = os.RemoveAll(dir)
			h.err = fmt.Errorf("verify: spill heads: %w", err)
			return
		}
		h.dir, h.db = dir, db
	}
	err := h.db.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists(bucketHeads)
		if err != nil {
			return err
		}
		for k, v := range h.pending {
			if err := b.Put([]byte(k), encodeHead(v)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		h.err = fmt.Errorf("verify: spill heads: %w", err)
		return
	}
	clear(h.pending)
}

// close removes the spill file.
func (h *headStore) close() {
	if h.db != nil {
		_ = h.db.Close()
		_ = os.RemoveAll(h.dir)
		h.db = nil
	}
}

// Head flags on disk.
const (
	headChained = 1 << iota
	headUnknown
	headUnchained
)

func encodeHead(v *chainHead) []byte {
	out := make([]byte, 17, 17+len(v.hash))
	if v.chained {
		out[0] |= headChained
	}
	if v.unknown {
		out[0] |= headUnknown
	}
	if v.hasUnch {
		out[0] |= headUnchained
	}
	binary.BigEndian.PutUint64(out[1:], v.seq)
	binary.BigEndian.PutUint64(out[9:], uint64(v.line))
	return append(out, v.hash...)
}

func decodeHead(data []byte) *chainHead {
	if len(data) < 17 {
		return nil
	}
	return &chainHead{
		chained: data[0]&headChained != 0,
		unknown: data[0]&headUnknown != 0,
		hasUnch: data[0]&headUnchained != 0,
		seq:     binary.BigEndian.Uint64(data[1:]),
		line:    int(binary.BigEndian.Uint64(data[9:])),
		hash:    string(data[17:]),
	}
}
