package handlers

import "testing"

// TestLRUBound: the cache keeps at most size entries, drops the least
// recently used first, and passes over busy entries.
func TestLRUBound(t *testing.T) {
	t.Parallel()
	busy := map[int]bool{}
	c := newLRU[int, int](3, func(v int) bool { return busy[v] })
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
	busy[2] = true
	c.put(4, 4) // 2 is the oldest but busy: 0, the next oldest, goes
	if _, ok := c.get(0); ok {
		t.Fatal("0 kept")
	}
	for _, k := range []int{2, 4} {
		if _, ok := c.get(k); !ok {
			t.Fatalf("%d dropped", k)
		}
	}
	if c.len() != 3 {
		t.Fatalf("len %d", c.len())
	}
	for i := 5; i < 100; i++ {
		c.put(i, i)
		if c.len() > 3 {
			t.Fatalf("len %d after %d puts", c.len(), i)
		}
	}
	if _, ok := c.get(2); !ok {
		t.Fatal("busy entry dropped")
	}
	busy[2] = false
	for i := 100; i < 103; i++ {
		c.put(i, i)
	}
	if _, ok := c.get(2); ok {
		t.Fatal("entry kept after it stopped being busy")
	}
}
