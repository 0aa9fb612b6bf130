package taskqueue

import "container/list"

// ExportCacheSize bounds the task packets an export keeps while it walks
// the log.
const ExportCacheSize = 65536

// lru is a map bounded to size entries that drops the least recently used
// one first. It is not safe for concurrent use: callers hold their lock.
type lru[K comparable, V any] struct {
	size  int
	order *list.List // front: most recently used; values are *lruItem
	items map[K]*list.Element
	// evicted, when set, is called with each entry put drops.
	evicted func(K, V)
}

type lruItem[K comparable, V any] struct {
	key K
	val V
}

func newLRU[K comparable, V any](size int) *lru[K, V] {
	if size < 1 {
		size = 1
	}
	return &lru[K, V]{size: size, order: list.New(), items: map[K]*list.Element{}}
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
// least recently used entries while over size.
func (c *lru[K, V]) put(k K, v V) {
	if el, ok := c.items[k]; ok {
		el.Value.(*lruItem[K, V]).val = v
		c.order.MoveToFront(el)
		return
	}
	c.items[k] = c.order.PushFront(&lruItem[K, V]{key: k, val: v})
	for c.order.Len() > c.size {
		el := c.order.Back()
		it := el.Value.(*lruItem[K, V])
		c.order.Remove(el)
		delete(c.items, it.key)
		if c.evicted != nil {
			c.evicted(it.key, it.val)
		}
	}
}

// len returns the number of entries.
func (c *lru[K, V]) len() int { return c.order.Len() }
