package httpapi_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/trellis/trellis"
)

// badCase is one refused request: its status, stable code, field and a
// fragment its message must contain.
type badCase struct {
	name   string
	method string
	path   string
	body   any // string or []byte sent as is; nil for none
	status int
	code   trellis.Code
	field  string // "" when the error names no field
	msg    string // fragment of the message, "" to skip
}

// TestBadInput sends bad input to every route and checks the status, the
// stable code, the field, and that the event log is untouched.
func TestBadInput(t *testing.T) {
	t.Parallel()
	b := setup(t)

	queued := b.addTask(t, trellis.AddTaskRequest{Queue: "fixture-queued", Objective: "stays queued"})
	claimed := b.addTask(t, trellis.AddTaskRequest{Queue: "fixture-claimed", Objective: "claimed by w1"})
	if c := b.claim(t, "fixture-claimed", "w1"); c == nil || c.TaskID != claimed.TaskID {
		t.Fatalf("claim fixture: %+v", c)
	}
	finished := b.addTask(t, trellis.AddTaskRequest{Queue: "fixture-done", Objective: "done by w1"})
	if c := b.claim(t, "fixture-done", "w1"); c == nil || c.TaskID != finished.TaskID {
		t.Fatalf("claim fixture: %+v", c)
	}
	b.do(t, http.MethodPost, "/v1/queue/tasks/"+finished.TaskID+"/done", `{"worker":"w1","what_was_done":"x"}`).expect(t, http.StatusOK, nil)

	unknown := unknownID()
	big := `{"objective":"` + strings.Repeat("a", 1<<20) + `"}`
	bigOf := func(field string) string { return `{"` + field + `":"` + strings.Repeat("a", 1<<20) + `"}` }
	nonUTF8 := func(field string) []byte { return []byte(`{"` + field + `":"bad ` + "\xff\xfe" + ` bytes"}`) }
	const (
		add    = "/v1/queue/tasks"
		next   = "/v1/queue/next"
		list   = "/v1/queue/tasks"
		export = "/v1/queue/export"
		replay = "/v1/replay"
	)
	done := func(id string) string { return "/v1/queue/tasks/" + id + "/done" }
	fail := func(id string) string { return "/v1/queue/tasks/" + id + "/fail" }
	show := func(id string) string { return "/v1/queue/tasks/" + id }
	audit := func(id string) string { return "/v1/audit/" + id }
	post, get := http.MethodPost, http.MethodGet
	const bad, notFound, conflict, tooLarge = http.StatusBadRequest, http.StatusNotFound, http.StatusConflict, http.StatusRequestEntityTooLarge
	inv, nf, cf := trellis.CodeInvalid, trellis.CodeNotFound, trellis.CodeConflict

	cases := []badCase{
		// POST /v1/queue/tasks
		{"add/empty objective", post, add, `{"objective":""}`, bad, inv, "objective", "must not be empty"},
		{"add/blank objective", post, add, `{"objective":"  \n"}`, bad, inv, "objective", "must not be empty"},
		{"add/missing objective", post, add, `{"queue":"q"}`, bad, inv, "objective", ""},
		{"add/negative max_steps", post, add, `{"objective":"x","max_steps":-1}`, bad, inv, "max_steps", "negative"},
		{"add/negative max_tool_calls", post, add, `{"objective":"x","max_tool_calls":-5}`, bad, inv, "max_tool_calls", "negative"},
		{"add/negative max_attempts", post, add, `{"objective":"x","max_attempts":-1}`, bad, inv, "max_attempts", "negative"},
		{"add/budget too large", post, add, `{"objective":"x","max_steps":1000001}`, bad, inv, "max_steps", "at most"},
		{"add/fractional budget", post, add, `{"objective":"x","max_steps":1.5}`, bad, inv, "max_steps", "integer"},
		{"add/overflowing budget", post, add, `{"objective":"x","max_steps":1e30}`, bad, inv, "max_steps", "integer"},
		{"add/objective wrong type", post, add, `{"objective":5}`, bad, inv, "objective", "string"},
		{"add/inputs wrong type", post, add, `{"objective":"x","inputs":"a.go"}`, bad, inv, "inputs", "array"},
		{"add/empty input item", post, add, `{"objective":"x","inputs":[""]}`, bad, inv, "inputs", "empty"},
		{"add/metadata value wrong type", post, add, `{"objective":"x","metadata":{"k":1}}`, bad, inv, "metadata", "string"},
		{"add/bad metadata key", post, add, `{"objective":"x","metadata":{"a b":"v"}}`, bad, inv, "metadata", ""},
		{"add/bad queue", post, add, `{"objective":"x","queue":"bad.queue"}`, bad, inv, "queue", ""},
		{"add/bad parent_id", post, add, `{"objective":"x","parent_id":"nope"}`, bad, inv, "parent_id", "ULID"},
		{"add/unknown parent_id", post, add, `{"objective":"x","parent_id":"` + unknown + `"}`, bad, inv, "parent_id", "does not exist"},
		{"add/unknown field", post, add, `{"objective":"x","urgency":1}`, bad, inv, "urgency", `"urgency"`},
		{"add/priority 5", post, add, `{"objective":"x","priority":5}`, bad, inv, "priority", "1 (first) to 4"},
		{"add/bad run_at", post, add, `{"objective":"x","run_at":"noon"}`, bad, inv, "run_at", "RFC 3339"},
		{"add/unknown prerequisite", post, add, `{"objective":"x","after":["01JB0000000000000000000000"]}`, bad, inv, "after", "does not exist"},
		{"add/unknown field wrong case", post, add, `{"Objective":"x"}`, bad, inv, "Objective", `"Objective"`},
		{"add/duplicate field", post, add, `{"objective":"x","objective":"y"}`, bad, inv, "objective", "more than once"},
		{"add/malformed", post, add, `{"objective":`, bad, inv, "body", "JSON"},
		{"add/malformed key", post, add, `{objective:"x"}`, bad, inv, "body", "JSON"},
		{"add/trailing comma", post, add, `{"objective":"x",}`, bad, inv, "body", "JSON"},
		{"add/array", post, add, `[{"objective":"x"}]`, bad, inv, "body", "object"},
		{"add/null", post, add, `null`, bad, inv, "body", "object"},
		{"add/string", post, add, `"x"`, bad, inv, "body", "object"},
		{"add/empty body", post, add, ``, bad, inv, "body", "empty"},
		{"add/no body", post, add, nil, bad, inv, "body", "empty"},
		{"add/trailing object", post, add, `{"objective":"x"} {"objective":"y"}`, bad, inv, "body", "after the JSON object"},
		{"add/trailing garbage", post, add, `{"objective":"x"}garbage`, bad, inv, "body", "after the JSON object"},
		{"add/non-UTF-8", post, add, nonUTF8("objective"), bad, inv, "body", "UTF-8"},
		{"add/non-UTF-8 key", post, add, []byte("{\"obj\xffective\":\"x\"}"), bad, inv, "body", "UTF-8"},
		{"add/over 1 MiB", post, add, big, tooLarge, inv, "body", "larger than 1048576 bytes"},
		{"add/query parameter", post, add + "?dry_run=1", `{"objective":"x"}`, bad, inv, "dry_run", "unknown query parameter"},

		// POST /v1/queue/next
		{"next/missing worker", post, next, `{}`, bad, inv, "worker", "must not be empty"},
		{"next/bad worker", post, next, `{"worker":"bad worker!"}`, bad, inv, "worker", ""},
		{"next/bad queue", post, next, `{"worker":"w","queue":"no/slash"}`, bad, inv, "queue", ""},
		{"next/worker wrong type", post, next, `{"worker":["w"]}`, bad, inv, "worker", "string"},
		{"next/unknown field", post, next, `{"worker":"w","lease":30}`, bad, inv, "lease", `"lease"`},
		{"next/malformed", post, next, `{"worker":"w"`, bad, inv, "body", "JSON"},
		{"next/null", post, next, `null`, bad, inv, "body", "object"},
		{"next/trailing data", post, next, `{"worker":"w"}]`, bad, inv, "body", "after the JSON object"},
		{"next/non-UTF-8", post, next, nonUTF8("worker"), bad, inv, "body", "UTF-8"},
		{"next/over 1 MiB", post, next, bigOf("worker"), tooLarge, inv, "body", "larger than"},

		// POST /v1/queue/tasks/{id}/done
		{"done/invalid id", post, done("not-a-ulid"), `{"worker":"w1","what_was_done":"x"}`, bad, inv, "id", "ULID"},
		{"done/lowercase id", post, done(strings.ToLower(claimed.TaskID)), `{"worker":"w1","what_was_done":"x"}`, bad, inv, "id", "ULID"},
		{"done/unknown id", post, done(unknown), `{"worker":"w1","what_was_done":"x"}`, notFound, nf, "", unknown},
		{"done/missing what_was_done", post, done(claimed.TaskID), `{"worker":"w1"}`, bad, inv, "what_was_done", "must not be empty"},
		{"done/missing worker", post, done(claimed.TaskID), `{"what_was_done":"x"}`, bad, inv, "worker", "must not be empty"},
		{"done/negative steps_used", post, done(claimed.TaskID), `{"worker":"w1","what_was_done":"x","steps_used":-1}`, bad, inv, "steps_used", "negative"},
		{"done/negative tool_calls_used", post, done(claimed.TaskID), `{"worker":"w1","what_was_done":"x","tool_calls_used":-3}`, bad, inv, "tool_calls_used", "negative"},
		{"done/other task_id", post, done(claimed.TaskID), `{"task_id":"` + queued.TaskID + `","worker":"w1","what_was_done":"x"}`, bad, inv, "task_id", "path"},
		{"done/invalid task_id", post, done(claimed.TaskID), `{"task_id":"x","worker":"w1","what_was_done":"x"}`, bad, inv, "task_id", "path"},
		{"done/unknown field", post, done(claimed.TaskID), `{"worker":"w1","what_was_done":"x","summary":"s"}`, bad, inv, "summary", `"summary"`},
		{"done/malformed", post, done(claimed.TaskID), `{"worker":"w1",`, bad, inv, "body", "JSON"},
		{"done/non-UTF-8", post, done(claimed.TaskID), nonUTF8("what_was_done"), bad, inv, "body", "UTF-8"},
		{"done/over 1 MiB", post, done(claimed.TaskID), bigOf("what_was_done"), tooLarge, inv, "body", "larger than"},
		{"done/wrong worker", post, done(claimed.TaskID), `{"worker":"w2","what_was_done":"x"}`, conflict, cf, "", "claimed by worker"},
		{"done/queued task", post, done(queued.TaskID), `{"worker":"w1","what_was_done":"x"}`, conflict, cf, "", "not claimed"},
		{"done/twice", post, done(finished.TaskID), `{"worker":"w1","what_was_done":"again"}`, conflict, cf, "", "already done"},

		// POST /v1/queue/tasks/{id}/fail
		{"fail/invalid id", post, fail("123"), `{"worker":"w1","error":"e"}`, bad, inv, "id", "ULID"},
		{"fail/unknown id", post, fail(unknown), `{"worker":"w1","error":"e"}`, notFound, nf, "", unknown},
		{"fail/missing error", post, fail(claimed.TaskID), `{"worker":"w1"}`, bad, inv, "error", "must not be empty"},
		{"fail/negative tool_calls_used", post, fail(claimed.TaskID), `{"worker":"w1","error":"e","tool_calls_used":-1}`, bad, inv, "tool_calls_used", "negative"},
		{"fail/empty blocker", post, fail(claimed.TaskID), `{"worker":"w1","error":"e","blockers":[" "]}`, bad, inv, "blockers", "empty"},
		{"fail/other task_id", post, fail(claimed.TaskID), `{"task_id":"` + unknown + `","worker":"w1","error":"e"}`, bad, inv, "task_id", "path"},
		{"fail/done-only field", post, fail(claimed.TaskID), `{"worker":"w1","error":"e","citations":["c"]}`, bad, inv, "citations", `"citations"`},
		{"fail/malformed", post, fail(claimed.TaskID), `{"worker":"w1","error":"e"`, bad, inv, "body", "JSON"},
		{"fail/non-UTF-8", post, fail(claimed.TaskID), nonUTF8("error"), bad, inv, "body", "UTF-8"},
		{"fail/over 1 MiB", post, fail(claimed.TaskID), bigOf("error"), tooLarge, inv, "body", "larger than"},
		{"fail/wrong worker", post, fail(claimed.TaskID), `{"worker":"w2","error":"e"}`, conflict, cf, "", "claimed by worker"},
		{"fail/after done", post, fail(finished.TaskID), `{"worker":"w1","error":"e"}`, conflict, cf, "", "already done"},

		// GET /v1/queue/tasks
		{"list/bad status", get, list + "?status=bogus", nil, bad, inv, "status", "unknown status"},
		{"list/bad queue", get, list + "?queue=bad.queue", nil, bad, inv, "queue", ""},
		{"list/status twice", get, list + "?status=done&status=failed", nil, bad, inv, "status", "2 times"},
		{"list/unknown parameter", get, list + "?page=2", nil, bad, inv, "page", "unknown query parameter"},
		{"list/limit not a number", get, list + "?limit=ten", nil, bad, inv, "limit", "not an integer"},
		{"list/limit negative", get, list + "?limit=-5", nil, bad, inv, "limit", "negative"},
		{"list/limit over the maximum", get, list + "?limit=1001", nil, bad, inv, "limit", "at most 1000"},
		{"list/limit overflows", get, list + "?limit=99999999999999999999", nil, bad, inv, "limit", "not an integer"},
		{"list/malformed cursor", get, list + "?cursor=abc", nil, bad, inv, "cursor", "next_cursor"},
		{"list/cursor of no task", get, list + "?cursor=" + trellis.EncodeCursor("nope"), nil, bad, inv, "cursor", ""},
		{"list/newest not a boolean", get, list + "?newest=maybe", nil, bad, inv, "newest", "not a boolean"},
		{"list/oldest-first cursor on a newest-first list", get, list + "?newest=true&cursor=" + trellis.EncodeCursor(claimed.TaskID), nil, bad, inv, "cursor", "other order"},
		{"list/bad since", get, list + "?since=yesterday", nil, bad, inv, "since", "RFC 3339"},
		{"list/since without zone", get, list + "?since=2026-01-02T15:04:05", nil, bad, inv, "since", "RFC 3339"},
		{"list/non-UTF-8 status", get, list + "?status=%ff", nil, bad, inv, "status", "UTF-8"},
		{"list/malformed query", get, list + "?status=%zz", nil, bad, inv, "query", "malformed"},

		// GET /v1/queue/tasks/{id}
		{"show/invalid id", get, show("not-a-ulid"), nil, bad, inv, "id", "ULID"},
		{"show/non-UTF-8 id", get, show("%ff%fe"), nil, bad, inv, "id", "ULID"},
		{"show/unknown id", get, show(unknown), nil, notFound, nf, "", unknown},
		{"show/query parameter", get, show(queued.TaskID) + "?verbose=1", nil, bad, inv, "verbose", "unknown query parameter"},

		// GET /v1/queue/export
		{"export/query parameter", get, export + "?queue=default", nil, bad, inv, "queue", "unknown query parameter"},

		// GET /v1/audit/{id}
		{"audit/invalid id", get, audit("not-a-ulid"), nil, bad, inv, "id", "ULID"},
		{"audit/unknown id", get, audit(unknown), nil, notFound, nf, "", unknown},

		// POST /v1/replay
		{"replay/unknown field", post, replay, `{"full":true}`, bad, inv, "full", `"full"`},
		{"replay/malformed", post, replay, `{`, bad, inv, "body", "JSON"},
		{"replay/array", post, replay, `[]`, bad, inv, "body", "object"},
		{"replay/trailing data", post, replay, `{}{}`, bad, inv, "body", "after the JSON object"},
		{"replay/non-UTF-8", post, replay, []byte("{\"\xff\":1}"), bad, inv, "body", "UTF-8"},
		{"replay/over 1 MiB", post, replay, bigOf("x"), tooLarge, inv, "body", "larger than"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := b.lastSeq(t)
			b.do(t, c.method, c.path, c.body).expectError(t, c.status, c.code, c.field, c.msg)
			if after := b.lastSeq(t); after != before {
				t.Fatalf("event log changed: last seq %d -> %d", before, after)
			}
		})
	}

	// The refused requests left the fixtures as they were.
	for id, want := range map[string]trellis.Status{queued.TaskID: trellis.StatusQueued, claimed.TaskID: trellis.StatusClaimed, finished.TaskID: trellis.StatusDone} {
		var task trellis.Task
		b.do(t, get, show(id), nil).expect(t, http.StatusOK, &task)
		if task.Status != want {
			t.Errorf("task %s is %s, want %s", id, task.Status, want)
		}
	}
}
