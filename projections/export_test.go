package projections

// FailSaveAfter makes the board's next saves fail after writing n tasks
// into their transaction (0 turns it off): a crash in the middle of a
// commit.
func (b *Board) FailSaveAfter(n int) { b.failAfter = n }
