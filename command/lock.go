package command

import "sync"

// locks hands out one mutex per aggregate id, kept only while someone
// holds or waits for it (so the map stays as small as the work in flight).
type locks struct {
	mu sync.Mutex
	m  map[string]*aggLock
}

type aggLock struct {
	mu   sync.Mutex
	refs int
}

func newLocks() *locks { return &locks{m: map[string]*aggLock{}} }

func (l *locks) lock(id string) func() {
	l.mu.Lock()
	al, ok := l.m[id]
	if !ok {
		al = &aggLock{}
		l.m[id] = al
	}
	al.refs++
	l.mu.Unlock()
	al.mu.Lock()
	return func() {
		al.mu.Unlock()
		l.mu.Lock()
		if al.refs--; al.refs == 0 {
			delete(l.m, id)
		}
		l.mu.Unlock()
	}
}
