package audit

import (
	"container/list"
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
	size    int
	order   *list.List // front: most recently used; values are *headEntry
	mem     map[string]*list.Element
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

// headEntry is one aggregate's head held in memory.
type headEntry struct {
	key  string
	head *chainHead
}

func newHeadStore(size int) *headStore {
	size = max(1, size)
	return &headStore{size: size, order: list.New(), mem: map[string]*list.Element{}, pending: map[string]*chainHead{}, batch: min(spillBatch, size)}
}

// get returns the head of key, if the check has seen the aggregate.
func (h *headStore) get(key string) (*chainHead, bool, error) {
	if el, ok := h.mem[key]; ok {
		h.order.MoveToFront(el)
		return el.Value.(*headEntry).head, true, nil
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
	if el, ok := h.mem[key]; ok {
		el.Value.(*headEntry).head = v
		h.order.MoveToFront(el)
		return h.err
	}
	h.mem[key] = h.order.PushFront(&headEntry{key: key, head: v})
	for h.order.Len() > h.size {
		// The least recently used head goes to the spill file.
		el := h.order.Back()
		e := el.Value.(*headEntry)
		h.order.Remove(el)
		delete(h.mem, e.key)
		h.pending[e.key] = e.head
		if len(h.pending) >= h.batch {
			h.flush()
		}
	}
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
