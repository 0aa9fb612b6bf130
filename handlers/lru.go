package handlers

import (
	"container/list"
	"sync"
)

// Cache bounds of the per-process aggregate caches. An evicted entry is
// simply loaded again from the log when next used; the concurrency check
// of every append (DESIGN.md rule 2) keeps decisions right either way.
const (
	// GraphCacheSize bounds the VINE graphs a process keeps folded.
	GraphCacheSize = 256
	// AgentTaskCacheSize bounds the agent tasks a process keeps folded.
	AgentTaskCacheSize = 4096
	// MemoryScopeCacheSize bounds the memory scopes a process keeps folded.
	MemoryScopeCacheSize = 1024
	// ExportCacheSize bounds the task packets an export keeps while it
	// walks the log.
	ExportCacheSize = 65536
)

// lru is a map bounded to size entries that drops the least recently used
// one first. It is not safe for concurrent use: callers hold their lock.
type lru[K comparable, V any] struct {
	size  int
	order *list.List // front: most recently used; values are *lruItem
	items map[K]*list.Element
	// busy, when set, tells an entry that must not be dropped now (one in
	// use); such entries are passed over, so the cache may exceed size
	// while they are busy.
	busy func(V) bool
	// evicted, when set, is called with each entry put drops.
	evicted func(K, V)
}

type lruItem[K comparable, V any] struct {
	key K
	val V
}

func newLRU[K comparable, V any](size int, busy func(V) bool) *lru[K, V] {
	if size < 1 {
		size = 1
	}
	return &lru[K, V]{size: size, order: list.New(), items: map[K]*list.Element{}, busy: busy}
}

// get returns the entry of k and marks it used.
func (c *lru[K, V]) get(k K) (V, bool) {
	el, ok := c.items[k]
	if !ok {
		var zero V
		return zero, false
	}
	c.order.MoveToFront(el)
	return el.Value.(*lruItem[K, V]).val, true
}

// put stores v under k as the most recently used entry, then drops the
// least recently used entries that are not busy while over size.
func (c *lru[K, V]) put(k K, v V) {
	if el, ok := c.items[k]; ok {
		el.Value.(*lruItem[K, V]).val = v
		c.order.MoveToFront(el)
		return
	}
	c.items[k] = c.order.PushFront(&lruItem[K, V]{key: k, val: v})
	for el := c.order.Back(); el != nil && c.order.Len() > c.size; {
		prev := el.Prev()
		it := el.Value.(*lruItem[K, V])
		if it.key != k && (c.busy == nil || !c.busy(it.val)) {
			c.order.Remove(el)
			delete(c.items, it.key)
			if c.evicted != nil {
				c.evicted(it.key, it.val)
			}
		}
		el = prev
	}
}

// drop removes the entry of k, if any (without calling evicted).
func (c *lru[K, V]) drop(k K) {
	if el, ok := c.items[k]; ok {
		c.order.Remove(el)
		delete(c.items, k)
	}
}

// len returns the number of entries.
func (c *lru[K, V]) len() int { return c.order.Len() }

// busy reports whether mu is held (by a command using the entry).
func busy(mu *sync.Mutex) bool {
	if mu.TryLock() {
		mu.Unlock()
		return false
	}
	return true
}
