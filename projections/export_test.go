package projections

import "os"

// FailSaveAfter makes the board's next saves fail after writing n tasks
// into their transaction (0 turns it off): a crash in the middle of a
// commit.
func (b *Board) FailSaveAfter(n int) { b.failAfter = n }

// SetReplayMin sets the smallest backlog replayed without per-commit syncs.
func (b *Board) SetReplayMin(n uint64) { b.replayMin = n }

// CloseAbruptly closes the file as a crash would leave it: no sync, the
// replay mark left in place.
func (b *Board) CloseAbruptly() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	err := b.db.Close()
	b.db = nil
	return err
}

// ReplayMarked reports whether the replay mark is on disk.
func (b *Board) ReplayMarked() bool {
	_, err := os.Stat(b.markPath())
	return err == nil
}
