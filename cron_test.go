package trellis_test

import (
	"strings"
	"testing"
	"time"

	"github.com/trellis/trellis"
)

func at(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

func TestCronNext(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ expr, from, want string }{
		{"0 9 * * 1-5", "2026-01-02T08:59:00Z", "2026-01-02T09:00:00Z"}, // a Friday
		{"0 9 * * 1-5", "2026-01-02T09:00:00Z", "2026-01-05T09:00:00Z"}, // strictly after; skips the weekend
		{"*/15 * * * *", "2026-03-01T10:07:30Z", "2026-03-01T10:15:00Z"},
		{"5/20 * * * *", "2026-03-01T10:26:00Z", "2026-03-01T10:45:00Z"},
		{"0 0 29 2 *", "2026-03-01T00:00:00Z", "2028-02-29T00:00:00Z"},
		{"0 0 1 jan,jul *", "2026-02-01T00:00:00Z", "2026-07-01T00:00:00Z"},
		{"0 12 13 * fri", "2026-02-02T00:00:00Z", "2026-02-06T12:00:00Z"}, // day of month OR day of week
		{"30 2 * * 7", "2026-01-01T00:00:00Z", "2026-01-04T02:30:00Z"},    // 7 is Sunday
		{"@hourly", "2026-01-01T00:00:00Z", "2026-01-01T01:00:00Z"},
		{"@daily", "2026-01-01T10:00:00Z", "2026-01-02T00:00:00Z"},
		{"59 23 31 12 *", "2026-12-31T23:59:00Z", "2027-12-31T23:59:00Z"},
	} {
		cr, err := trellis.ParseCron(c.expr)
		if err != nil {
			t.Fatalf("%q: %v", c.expr, err)
		}
		if got := cr.Next(at(c.from)); !got.Equal(at(c.want)) {
			t.Errorf("%q after %s = %s; want %s", c.expr, c.from, got.Format(time.RFC3339), c.want)
		}
	}
}

func TestCronRejectsBadSyntax(t *testing.T) {
	t.Parallel()
	for _, expr := range []string{"", "* * * *", "* * * * * *", "60 * * * *", "* 24 * * *", "* * 0 * *",
		"* * * 13 *", "* * * * 8", "5-1 * * * *", "*/0 * * * *", "a * * * *", "1,,2 * * * *", "0 0 30 2 *", "@never"} {
		_, err := trellis.ParseCron(expr)
		te := trellis.AsError(err)
		if err == nil || te.Code != trellis.CodeInvalid || te.Field != "cron" {
			t.Errorf("%q: %v; want invalid naming cron", expr, err)
		}
	}
}

func TestPeriodCountsTicks(t *testing.T) {
	t.Parallel()
	p, err := trellis.NewPeriod("10m", "")
	if err != nil {
		t.Fatal(err)
	}
	anchor := at("2026-01-01T00:00:00Z")
	if got := p.Next(anchor, at("2026-01-01T00:10:00Z")); !got.Equal(at("2026-01-01T00:20:00Z")) {
		t.Fatalf("next = %s", got)
	}
	n, last := p.Count(anchor, at("2026-01-01T00:10:00Z"), at("2026-01-01T01:05:00Z"))
	if n != 5 || !last.Equal(at("2026-01-01T01:00:00Z")) {
		t.Fatalf("count = %d, last %s; want 5 ticks ending 01:00", n, last)
	}
	c, _ := trellis.NewPeriod("", "0 9 * * 1-5")
	n, last = c.Count(anchor, at("2026-01-02T00:00:00Z"), at("2026-01-09T23:00:00Z"))
	if n != 6 || !last.Equal(at("2026-01-09T09:00:00Z")) {
		t.Fatalf("cron count = %d, last %s; want 6 weekday mornings", n, last)
	}
}

func TestAddRequestSchedulingBadInput(t *testing.T) {
	t.Parallel()
	id := "01JB0000000000000000000000"
	for _, c := range []struct {
		name  string
		req   trellis.AddTaskRequest
		field string
	}{
		{"priority too high", trellis.AddTaskRequest{Priority: 5}, "priority"},
		{"priority negative", trellis.AddTaskRequest{Priority: -1}, "priority"},
		{"bad delay", trellis.AddTaskRequest{Delay: "soon"}, "delay"},
		{"zero delay", trellis.AddTaskRequest{Delay: "0s"}, "delay"},
		{"negative delay", trellis.AddTaskRequest{Delay: "-5s"}, "delay"},
		{"delay over a year", trellis.AddTaskRequest{Delay: "9000h"}, "delay"},
		{"delay and run_at", trellis.AddTaskRequest{Delay: "1s", RunAt: "2026-01-01T00:00:00Z"}, "run_at"},
		{"bad run_at", trellis.AddTaskRequest{RunAt: "tomorrow"}, "run_at"},
		{"unique_for without key", trellis.AddTaskRequest{UniqueFor: "1h"}, "unique_for"},
		{"bad unique_for", trellis.AddTaskRequest{UniqueKey: "k", UniqueFor: "1 hour"}, "unique_for"},
		{"blank unique key", trellis.AddTaskRequest{UniqueKey: "  "}, "unique_key"},
		{"long concurrency key", trellis.AddTaskRequest{ConcurrencyKey: strings.Repeat("k", 300)}, "concurrency_key"},
		{"bad prerequisite id", trellis.AddTaskRequest{After: []string{"nope"}}, "after"},
		{"prerequisite twice", trellis.AddTaskRequest{After: []string{id, id}}, "after"},
	} {
		c.req.Objective = "x"
		err := c.req.Normalize()
		te := trellis.AsError(err)
		if err == nil || te.Code != trellis.CodeInvalid || te.Field != c.field {
			t.Errorf("%s: %v; want invalid naming %s", c.name, err, c.field)
		}
	}
	ok := trellis.AddTaskRequest{Objective: "x", Delay: "30s", UniqueKey: "k", UniqueFor: "1h", After: []string{id}}
	if err := ok.Normalize(); err != nil || ok.Priority != trellis.DefaultPriority {
		t.Fatalf("good request: %v (priority %d)", err, ok.Priority)
	}
}

func TestParseRate(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]float64{"10/s": 10, "2.5/s": 2.5, "120/m": 2, "3600/h": 1, "off": 0} {
		got, err := trellis.ParseRate(in)
		if err != nil || got != want {
			t.Errorf("%q = %g, %v; want %g", in, got, err, want)
		}
	}
	for _, in := range []string{"0/s", "0", "-1/s", "10", "10/d", "x/s", "NaN/s", "1e9/s", ""} {
		if _, err := trellis.ParseRate(in); trellis.AsError(err).Field != "rate" {
			t.Errorf("%q: %v; want invalid naming rate", in, err)
		}
	}
}
