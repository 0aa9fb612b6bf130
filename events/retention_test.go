package events

import (
	"reflect"
	"testing"
)

func TestSeqRanges(t *testing.T) {
	var s SeqRanges
	s.Add(5, 7)
	s.Add(10, 10)
	s.Add(8, 8) // joins 5-7 and ... not 10
	s.Add(20, 30)
	s.Add(2, 1) // empty: ignored
	if want := [][2]uint64{{5, 8}, {10, 10}, {20, 30}}; !reflect.DeepEqual(s.Ranges(), want) {
		t.Fatalf("ranges = %v, want %v", s.Ranges(), want)
	}
	s.Add(9, 21)
	if want := [][2]uint64{{5, 30}}; !reflect.DeepEqual(s.Ranges(), want) {
		t.Fatalf("ranges = %v, want %v", s.Ranges(), want)
	}
	s.Add(40, 41)
	for _, c := range []struct {
		from, to uint64
		want     [][2]uint64
	}{
		{5, 30, nil},
		{1, 4, [][2]uint64{{1, 4}}},
		{3, 6, [][2]uint64{{3, 4}}},
		{29, 45, [][2]uint64{{31, 39}, {42, 45}}},
		{41, 41, nil},
	} {
		if got := s.Minus(c.from, c.to); !reflect.DeepEqual(got, c.want) {
			t.Errorf("Minus(%d, %d) = %v, want %v", c.from, c.to, got, c.want)
		}
	}
	if !s.Covers(6, 29) || s.Covers(6, 31) {
		t.Fatal("Covers is wrong")
	}
}
