package events

import (
	"fmt"
	"strings"
)

// Stream names, one per domain. Each stream holds the subjects
// trellis.<domain>.>, uses limits retention and file storage, and has the
// duplicate window on (Nats-Msg-Id = event id).
const (
	StreamQueue  = "TRELLIS_QUEUE"
	StreamVine   = "TRELLIS_VINE"
	StreamChunks = "TRELLIS_CHUNKS"
	StreamMemory = "TRELLIS_MEMORY"
	StreamTasks  = "TRELLIS_TASKS"
	// StreamAuth holds the access tokens' events (created, revoked): the
	// token registry of every server is a projection of it.
	StreamAuth = "TRELLIS_AUTH"
	// StreamWorkflows holds durable workflow runs (their journals) and
	// the workflows pools host.
	StreamWorkflows = "TRELLIS_WORKFLOWS"
)

// StreamSpec describes one domain stream.
type StreamSpec struct {
	// Name is the JetStream stream name.
	Name string
	// Domain is the second subject token (queue, vine, ...).
	Domain string
	// Description is what the stream holds; it is written to the stream config.
	Description string
	// Schedules allows message schedules (Nats-Schedule, nats-server
	// 2.12+): the queue's timers (delayed tasks, periodic schedules) are
	// messages the server publishes at their time. It implies roll-ups
	// (a schedule replaces the earlier one on its subject).
	Schedules bool
}

// Subjects is the subject filter the stream captures.
func (s StreamSpec) Subjects() string { return "trellis." + s.Domain + ".>" }

// Streams lists every domain stream Trellis creates.
func Streams() []StreamSpec {
	return []StreamSpec{
		{Name: StreamQueue, Domain: "queue", Description: "Trellis task queue: trellis.queue.<queue>.<task_id>.<event>", Schedules: true},
		{Name: StreamVine, Domain: "vine", Description: "Trellis VINE graphs: trellis.vine.<graph_id>.<event>"},
		{Name: StreamChunks, Domain: "chunks", Description: "Trellis code memory: trellis.chunks.<repo>.<event>"},
		{Name: StreamMemory, Domain: "memory", Description: "Trellis agent memory: observations, facts, consolidation runs"},
		{Name: StreamTasks, Domain: "tasks", Description: "Trellis agent tasks: tasks, agents, objectives"},
		{Name: StreamAuth, Domain: "auth", Description: "Trellis access tokens: trellis.auth.<name>.<event> (hashes only)"},
		{Name: StreamWorkflows, Domain: "workflows", Description: "Trellis durable workflows: trellis.workflows.run.<run_id>.<event>, trellis.workflows.def.<name>.<event>"},
	}
}

// StreamNames lists every JetStream stream Trellis owns: the domain
// streams and the stream behind the blob bucket (large payloads).
func StreamNames() []string {
	var out []string
	for _, s := range Streams() {
		out = append(out, s.Name)
	}
	return append(out, "OBJ_"+BlobBucket)
}

// StreamFor returns the spec of the stream whose subjects include subject.
func StreamFor(subject string) (StreamSpec, error) {
	parts := strings.SplitN(subject, ".", 3)
	if len(parts) >= 2 && parts[0] == "trellis" {
		for _, s := range Streams() {
			if s.Domain == parts[1] {
				return s, nil
			}
		}
	}
	return StreamSpec{}, fmt.Errorf("no Trellis stream holds subject %q", subject)
}

// ValidToken reports whether s can be used as one subject token: non-empty,
// no '.', '*', '>' or whitespace.
func ValidToken(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		switch {
		case r == '.' || r == '*' || r == '>' || r <= ' ' || r == 0x7f:
			return false
		}
	}
	return true
}
