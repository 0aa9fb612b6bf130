package projections

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/trellis/trellis"
)

// OpenBoardReadOnly opens the board file in dir for reading only (List,
// Task, Counts): a board rebuilt as of a point of the log, which any
// number of processes may read at once. It returns the board and the
// sequence it was saved at; Close releases it. A board that is missing,
// of another layout or marked as an unfinished replay is an error.
func OpenBoardReadOnly(dir string) (*Board, uint64, error) {
	b := NewBoard(dir)
	if _, err := os.Stat(b.markPath()); err == nil {
		return nil, 0, fmt.Errorf("board %s: its rebuild did not finish", b.path)
	}
	if _, err := os.Stat(b.path); err != nil {
		return nil, 0, fmt.Errorf("board %s: %w", b.path, err)
	}
	db, err := bolt.Open(b.path, 0o444, &bolt.Options{ReadOnly: true, Timeout: 10 * time.Second})
	if errors.Is(err, bolt.ErrTimeout) {
		return nil, 0, fmt.Errorf("board %s is being written by another process", b.path)
	}
	if err != nil {
		return nil, 0, fmt.Errorf("open board %s: %w", b.path, err)
	}
	var seq uint64
	counts := map[string]map[trellis.Status]int{}
	err = db.View(func(tx *bolt.Tx) error {
		m := tx.Bucket(bucketMeta)
		if m == nil || string(m.Get(keyVersion)) != boardVersion {
			return fmt.Errorf("board %s has another layout", b.path)
		}
		if v := m.Get(keySeq); len(v) == 8 {
			seq = binary.BigEndian.Uint64(v)
		}
		if v := m.Get(keyCounts); v != nil {
			return json.Unmarshal(v, &counts)
		}
		return nil
	})
	if err != nil {
		_ = db.Close()
		return nil, 0, fmt.Errorf("read board %s: %w", filepath.Base(b.path), err)
	}
	b.db, b.counts = db, counts
	return b, seq, nil
}
