package events

import "testing"

func TestSubjectMatches(t *testing.T) {
	for _, c := range []struct {
		filter, subject string
		want            bool
	}{
		{"a.b.>", "a.b.c", true},
		{"a.b.>", "a.b.c.d", true},
		{"a.b.>", "a.b", false},
		{"a.b.>", "a.bc.d", false},
		{"a.*.c.>", "a.x.c.d", true},
		{"a.*.c.>", "a.x.y.d", false},
		{"a.b", "a.b", true},
		{"a.b", "a.b.c", false},
		{"a.b.c", "a.b", false},
		{"a.*", "a.b", true},
		{"a.*", "a.b.c", false},
		{">", "a", true},
		{"trellis.queue.q.T1.>", "trellis.queue.q.T10.added", false},
		{"trellis.queue.q.T1.>", "trellis.queue.q.T1.added.p2", true},
	} {
		if got := subjectMatches(c.filter, c.subject); got != c.want {
			t.Errorf("subjectMatches(%q, %q) = %v; want %v", c.filter, c.subject, got, c.want)
		}
	}
}
