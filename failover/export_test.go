package failover

// PoolFor is the server pool a move of m to u would set.
func PoolFor(m *Mover, u, current string) []string { return m.pool(u, current) }
