package auth

// Tracked is how many connection ids a NATSAuth holds (tests).
func (a *NATSAuth) Tracked() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	n := 0
	for _, ids := range a.clients {
		n += len(ids)
	}
	return n
}
