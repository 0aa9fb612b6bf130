package taskqueue

import "testing"

// TestLRUBound: the cache keeps at most size entries and drops the least
// recently used first, telling evicted.
func TestLRUBound(t *testing.T) {
	t.Parallel()
	c := newLRU[int, int](3)
	var evicted []int
	c.evicted = func(k, _ int) { evicted = append(evicted, k) }
	for i := 0; i < 3; i++ {
		c.put(i, i)
	}
	if _, ok := c.get(0); !ok { // 0 is now the most recently used
		t.Fatal("0 missing")
	}
	c.put(3, 3) // drops 1, the least recently used
	if _, ok := c.get(1); ok || c.len() != 3 {
		t.Fatalf("1 kept (len %d)", c.len())
	}
	c.put(4, 4) // drops 2
	for _, k := range []int{0, 3, 4} {
		if _, ok := c.get(k); !ok {
			t.Fatalf("%d dropped", k)
		}
	}
	for i := 5; i < 100; i++ {
		c.put(i, i)
		if c.len() > 3 {
			t.Fatalf("len %d after %d puts", c.len(), i)
		}
	}
	if len(evicted) != 97 || evicted[0] != 1 || evicted[1] != 2 {
		t.Fatalf("evicted %v", evicted[:min(len(evicted), 5)])
	}
}
