package trellis

import (
	"context"
	"fmt"
	"regexp"
	"time"
)

// ScheduleService is the periodic side of the queue: schedules that add a
// task at every tick. The in-process service and the NATS client both
// implement it.
type ScheduleService interface {
	// AddSchedule creates a schedule (a conflict when one of that name
	// exists).
	AddSchedule(ctx context.Context, req ScheduleRequest) (*Schedule, error)
	// Schedules lists the schedules, by name.
	Schedules(ctx context.Context) ([]*Schedule, error)
	// RemoveSchedule removes a schedule: no tick adds a task after it.
	RemoveSchedule(ctx context.Context, req RemoveScheduleRequest) (*Schedule, error)
}

// Schedule limits. They are part of the contract and documented in the
// README.
const (
	// MinEvery is the shortest interval of an --every schedule.
	MinEvery = time.Second
	// MaxEvery is the longest.
	MaxEvery = 366 * 24 * time.Hour
	// DefaultTickGrace is how late a tick may be taken up and still add its
	// task; a tick found later than that (everything was down) is reported
	// as missed instead.
	DefaultTickGrace = time.Minute
)

var scheduleNameRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// ScheduleRequest is schedule add's input: a name, the queue, exactly one
// of Every (a Go duration) and Cron (five fields, UTC), and the task each
// tick adds (the add request's fields; delay, run_at, after, unique keys,
// idempotency keys and parents are not for schedules).
type ScheduleRequest struct {
	Name  string `json:"name"`
	Every string `json:"every,omitempty"`
	Cron  string `json:"cron,omitempty"`
	AddTaskRequest
	Actor string `json:"actor,omitempty"`
}

// Normalize validates the request and fills the task's defaults.
func (r *ScheduleRequest) Normalize() error {
	if err := ValidateScheduleName(r.Name); err != nil {
		return err
	}
	switch {
	case r.Every == "" && r.Cron == "":
		return FieldError("every", "give every (e.g. 10m) or cron (e.g. \"0 9 * * 1-5\")")
	case r.Every != "" && r.Cron != "":
		return FieldError("cron", "give every or cron, not both")
	case r.Every != "":
		if _, err := ParseDuration("every", r.Every, MinEvery, MaxEvery); err != nil {
			return err
		}
	default:
		c, err := ParseCron(r.Cron)
		if err != nil {
			return err
		}
		r.Cron = c.String()
	}
	for _, f := range []struct{ name, v string }{
		{"delay", r.Delay}, {"run_at", r.RunAt}, {"unique_key", r.UniqueKey}, {"unique_for", r.UniqueFor},
		{"idempotency_key", r.IdempotencyKey}, {"parent_id", r.ParentID},
	} {
		if f.v != "" {
			return FieldError(f.name, "is not for schedules (each tick adds a task at once)")
		}
	}
	if len(r.After) > 0 {
		return FieldError("after", "is not for schedules (each tick adds a task at once)")
	}
	if r.Actor != "" {
		if err := ValidateWorkerID(r.Actor); err != nil {
			return FieldError("actor", "%v", AsError(err).Message)
		}
	}
	return r.AddTaskRequest.Normalize()
}

// Period returns the request's (normalized) period: its interval or its
// cron expression.
func (r *ScheduleRequest) Period() (Period, error) {
	return NewPeriod(r.Every, r.Cron)
}

// RemoveScheduleRequest names a schedule to remove.
type RemoveScheduleRequest struct {
	Name  string `json:"name"`
	Actor string `json:"actor,omitempty"`
}

// ValidateScheduleName checks a schedule name: 1–64 of A–Z a–z 0–9 _ -.
func ValidateScheduleName(name string) error {
	if !scheduleNameRE.MatchString(name) {
		return FieldError("name", "%q is not a schedule name: use 1-64 characters of A-Z a-z 0-9 _ -", truncate(name, 80))
	}
	return nil
}

// Period is when a schedule ticks: every interval from an anchor, or at the
// minutes a cron expression matches (UTC).
type Period struct {
	Every time.Duration
	Cron  *Cron
}

// NewPeriod parses an interval or a cron expression (exactly one).
func NewPeriod(every, cron string) (Period, error) {
	if every != "" {
		d, err := ParseDuration("every", every, MinEvery, MaxEvery)
		return Period{Every: d}, err
	}
	c, err := ParseCron(cron)
	if err != nil {
		return Period{}, err
	}
	return Period{Cron: c}, nil
}

// Next returns the first tick strictly after t; an interval's ticks are
// anchor + k·Every.
func (p Period) Next(anchor, t time.Time) time.Time {
	if p.Cron != nil {
		return p.Cron.Next(t)
	}
	if t.Before(anchor) {
		return anchor
	}
	k := t.Sub(anchor)/p.Every + 1
	return anchor.Add(k * p.Every).UTC()
}

// Count returns how many ticks lie in (from, to] and the last of them.
func (p Period) Count(anchor, from, to time.Time) (int, time.Time) {
	n := 0
	var last time.Time
	if p.Cron == nil {
		if !to.After(from) {
			return 0, last
		}
		first := p.Next(anchor, from)
		if first.After(to) {
			return 0, last
		}
		n = int(to.Sub(first)/p.Every) + 1
		return n, first.Add(time.Duration(n-1) * p.Every)
	}
	for t := p.Next(anchor, from); !t.IsZero() && !t.After(to); t = p.Next(anchor, t) {
		n++
		last = t
		if n > 1_000_000 {
			break
		}
	}
	return n, last
}

// String describes the period as given: "every 10m0s" or the cron text.
func (p Period) String() string {
	if p.Cron != nil {
		return p.Cron.String()
	}
	return fmt.Sprintf("every %s", p.Every)
}

// Schedule is a periodic schedule as folded from its events.
type Schedule struct {
	Name      string         `json:"name"`
	Queue     string         `json:"queue"`
	Every     string         `json:"every,omitempty"`
	Cron      string         `json:"cron,omitempty"`
	Task      AddTaskRequest `json:"task"`
	CreatedAt time.Time      `json:"created_at"`
	CreatedBy string         `json:"created_by,omitempty"`
	// Anchor is where an interval's ticks start (the creation time, to the
	// second).
	Anchor time.Time `json:"anchor"`
	// NextTick is the tick the schedule's timer is armed for.
	NextTick *time.Time `json:"next_tick,omitempty"`
	// LastTick and LastTaskID are the latest tick that added a task;
	// Fired counts them.
	LastTick   *time.Time `json:"last_tick,omitempty"`
	LastTaskID string     `json:"last_task_id,omitempty"`
	Fired      int        `json:"fired"`
	// Missed counts the ticks that passed while no Trellis server could
	// take them up (reported, not run); LastMissed is the latest report.
	Missed     int          `json:"missed"`
	LastMissed *MissedTicks `json:"last_missed,omitempty"`
	// Generation is the id of the event that created the schedule: a
	// schedule removed and added again is a new generation, and a timer of
	// an older one is ignored.
	Generation string     `json:"generation"`
	Removed    bool       `json:"removed,omitempty"`
	RemovedAt  *time.Time `json:"removed_at,omitempty"`
	// Folded counts the events folded into this state since the
	// schedule's last snapshot (or its first event): when it reaches a
	// bound, the schedule snapshots itself. Not part of the schedule as
	// the API shows it.
	Folded int `json:"-"`
}

// MissedTicks reports ticks that no task was added for.
type MissedTicks struct {
	Count      int       `json:"count"`
	First      time.Time `json:"first"`
	Last       time.Time `json:"last"`
	ReportedAt time.Time `json:"reported_at"`
}

// Period returns the schedule's period.
func (s *Schedule) Period() (Period, error) { return NewPeriod(s.Every, s.Cron) }

// Clone returns a deep copy.
func (s *Schedule) Clone() *Schedule {
	if s == nil {
		return nil
	}
	c := *s
	c.NextTick, c.LastTick, c.RemovedAt = clonePtr(s.NextTick), clonePtr(s.LastTick), clonePtr(s.RemovedAt)
	c.LastMissed = clonePtr(s.LastMissed)
	c.Task.Inputs = append([]string(nil), s.Task.Inputs...)
	if s.Task.Metadata != nil {
		c.Task.Metadata = make(map[string]string, len(s.Task.Metadata))
		for k, v := range s.Task.Metadata {
			c.Task.Metadata[k] = v
		}
	}
	return &c
}
