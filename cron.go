package trellis

import (
	"fmt"
	"math/bits"
	"strconv"
	"strings"
	"time"
)

// Cron is a parsed five-field cron expression (minute hour day-of-month
// month day-of-week), evaluated in UTC. Fields take numbers, *, ranges
// (1-5), steps (*/15, 0-30/10), lists (1,15), month names (jan-dec) and
// day names (sun-sat; 0 and 7 are Sunday). As in Vixie cron, when both the
// day of month and the day of week are restricted, a day matching either
// matches. The macros @hourly, @daily (@midnight), @weekly, @monthly and
// @yearly (@annually) are accepted.
type Cron struct {
	expr                       string
	minute, hour, dom, month   uint64
	dow                        uint64
	domRestricted, dowRestrict bool
}

var cronMacros = map[string]string{
	"@yearly": "0 0 1 1 *", "@annually": "0 0 1 1 *", "@monthly": "0 0 1 * *",
	"@weekly": "0 0 * * 0", "@daily": "0 0 * * *", "@midnight": "0 0 * * *", "@hourly": "0 * * * *",
}

var (
	monthNames = []string{"jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"}
	dayNames   = []string{"sun", "mon", "tue", "wed", "thu", "fri", "sat"}
)

// ParseCron parses expr; an error names the field "cron" and what is wrong.
func ParseCron(expr string) (*Cron, error) {
	fields := strings.Fields(strings.ToLower(strings.TrimSpace(expr)))
	if len(fields) == 1 {
		if m, ok := cronMacros[fields[0]]; ok {
			fields = strings.Fields(m)
		}
	}
	if len(fields) != 5 {
		return nil, FieldError("cron", "%q has %d fields; want 5 (minute hour day-of-month month day-of-week), e.g. \"0 9 * * 1-5\"", truncate(expr, 64), len(fields))
	}
	c := &Cron{expr: strings.Join(fields, " ")}
	specs := []struct {
		name     string
		min, max int
		names    []string
		nameBase int
		out      *uint64
	}{
		{"minute", 0, 59, nil, 0, &c.minute},
		{"hour", 0, 23, nil, 0, &c.hour},
		{"day of month", 1, 31, nil, 0, &c.dom},
		{"month", 1, 12, monthNames, 1, &c.month},
		{"day of week", 0, 7, dayNames, 0, &c.dow},
	}
	for i, sp := range specs {
		set, err := parseCronField(fields[i], sp.min, sp.max, sp.names, sp.nameBase)
		if err != nil {
			return nil, FieldError("cron", "%s field %q: %v", sp.name, fields[i], err)
		}
		*sp.out = set
	}
	if c.dow&(1<<7) != 0 {
		c.dow |= 1 // 7 is Sunday too
		c.dow &^= 1 << 7
	}
	c.domRestricted = fields[2] != "*" && !strings.HasPrefix(fields[2], "*/")
	c.dowRestrict = fields[4] != "*" && !strings.HasPrefix(fields[4], "*/")
	if c.Next(time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)).IsZero() {
		return nil, FieldError("cron", "%q never matches a date", truncate(expr, 64))
	}
	return c, nil
}

func parseCronField(f string, min, max int, names []string, nameBase int) (uint64, error) {
	var set uint64
	for _, part := range strings.Split(f, ",") {
		rng, stepText, hasStep := strings.Cut(part, "/")
		step := 1
		if hasStep {
			n, err := strconv.Atoi(stepText)
			if err != nil || n < 1 || n > max {
				return 0, fmt.Errorf("step %q must be a number from 1 to %d", stepText, max)
			}
			step = n
		}
		lo, hi := min, max
		switch {
		case rng == "*":
		case rng == "":
			return 0, fmt.Errorf("empty item")
		default:
			a, b, isRange := strings.Cut(rng, "-")
			var err error
			if lo, err = cronValue(a, min, max, names, nameBase); err != nil {
				return 0, err
			}
			hi = lo
			if isRange {
				if hi, err = cronValue(b, min, max, names, nameBase); err != nil {
					return 0, err
				}
				if hi < lo {
					return 0, fmt.Errorf("range %s goes backwards", rng)
				}
			} else if hasStep {
				hi = max // 5/15 means 5-max/15
			}
		}
		for v := lo; v <= hi; v += step {
			set |= 1 << uint(v)
		}
	}
	return set, nil
}

func cronValue(s string, min, max int, names []string, nameBase int) (int, error) {
	for i, n := range names {
		if s == n {
			return i + nameBase, nil
		}
	}
	v, err := strconv.Atoi(s)
	if err != nil {
		return 0, fmt.Errorf("%q is not a number", s)
	}
	if v < min || v > max {
		return 0, fmt.Errorf("%d is out of range %d-%d", v, min, max)
	}
	return v, nil
}

// String returns the expression (normalized: lower case, single spaces).
func (c *Cron) String() string { return c.expr }

// Next returns the first minute strictly after t that matches, in UTC, or
// the zero time when none does within eight years.
func (c *Cron) Next(t time.Time) time.Time {
	t = t.UTC().Truncate(time.Minute).Add(time.Minute)
	end := t.AddDate(8, 0, 0)
	for t.Before(end) {
		if c.month&(1<<uint(t.Month())) == 0 {
			t = time.Date(t.Year(), t.Month()+1, 1, 0, 0, 0, 0, time.UTC)
			continue
		}
		if !c.dayMatches(t) {
			t = time.Date(t.Year(), t.Month(), t.Day()+1, 0, 0, 0, 0, time.UTC)
			continue
		}
		if c.hour&(1<<uint(t.Hour())) == 0 {
			t = time.Date(t.Year(), t.Month(), t.Day(), t.Hour()+1, 0, 0, 0, time.UTC)
			continue
		}
		if m := nextBit(c.minute, t.Minute()); m >= 0 {
			return time.Date(t.Year(), t.Month(), t.Day(), t.Hour(), m, 0, 0, time.UTC)
		}
		t = time.Date(t.Year(), t.Month(), t.Day(), t.Hour()+1, 0, 0, 0, time.UTC)
	}
	return time.Time{}
}

func (c *Cron) dayMatches(t time.Time) bool {
	dom := c.dom&(1<<uint(t.Day())) != 0
	dow := c.dow&(1<<uint(t.Weekday())) != 0
	if c.domRestricted && c.dowRestrict {
		return dom || dow
	}
	return dom && dow
}

// nextBit returns the smallest set bit of set at or above from, or -1.
func nextBit(set uint64, from int) int {
	rest := set >> uint(from) << uint(from)
	if rest == 0 {
		return -1
	}
	return bits.TrailingZeros64(rest)
}
