package command

import (
	"container/list"
	"sync"
)

// cache keeps the most recently used aggregate states, bounded in count.
// It is only a hint: a stale entry costs a rejected append (or a refusal
// re-decided from the log) and a catch-up.
type cache[S any] struct {
	max int

	mu    sync.Mutex
	order *list.List // front: most recently used
	items map[string]*list.Element
}

type cacheEntry[S any] struct {
	id    string
	value S
	seq   uint64
	head  string
}

func newCache[S any](max int) *cache[S] {
	return &cache[S]{max: max, order: list.New(), items: map[string]*list.Element{}}
}

func (c *cache[S]) get(id string) (S, uint64, string, bool) {
	var zero S
	if c.max < 0 {
		return zero, 0, "", false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.items[id]
	if !ok {
		return zero, 0, "", false
	}
	c.order.MoveToFront(el)
	e := el.Value.(*cacheEntry[S])
	return e.value, e.seq, e.head, true
}

// put stores a state unless a later one is cached.
func (c *cache[S]) put(id string, v S, seq uint64, head string) {
	if c.max < 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.items[id]; ok {
		e := el.Value.(*cacheEntry[S])
		if e.seq > seq {
			return
		}
		e.value, e.seq, e.head = v, seq, head
		c.order.MoveToFront(el)
		return
	}
	c.items[id] = c.order.PushFront(&cacheEntry[S]{id: id, value: v, seq: seq, head: head})
	for c.order.Len() > c.max {
		last := c.order.Back()
		c.order.Remove(last)
		delete(c.items, last.Value.(*cacheEntry[S]).id)
	}
}

func (c *cache[S]) drop(id string) {
	if c.max < 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.items[id]; ok {
		c.order.Remove(el)
		delete(c.items, id)
	}
}

func (c *cache[S]) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.order.Len()
}
