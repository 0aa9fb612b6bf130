package httpapi_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/trellis/trellis"
)

// sseMsg is one server-sent event.
type sseMsg struct {
	event, id, data string
}

// sseStream reads a live feed.
type sseStream struct {
	res    *http.Response
	rd     *bufio.Reader
	cancel context.CancelFunc
}

// openLive opens GET /v1/events/live?query and checks the response is a
// stream.
func (b *testBundle) openLive(t *testing.T, query string) *sseStream {
	t.Helper()
	// The feed lives as long as the test's context: on a busy machine
	// the thousands of appends TestLiveFeedLagAndResume makes while the
	// feed is open took more than 30 s.
	ctx, cancel := context.WithCancel(b.ctx)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, b.server.URL+"/v1/events/live?"+query, nil)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	res, err := b.server.Client().Do(req)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	if res.StatusCode != http.StatusOK || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/event-stream") {
		cancel()
		t.Fatalf("live %s: status %d, type %q", query, res.StatusCode, res.Header.Get("Content-Type"))
	}
	s := &sseStream{res: res, rd: bufio.NewReader(res.Body), cancel: cancel}
	t.Cleanup(s.close)
	return s
}

func (s *sseStream) close() {
	s.cancel()
	_ = s.res.Body.Close()
}

// next reads the next message (pings skipped).
func (s *sseStream) next(t *testing.T) sseMsg {
	t.Helper()
	for {
		var m sseMsg
		for {
			line, err := s.rd.ReadString('\n')
			if err != nil {
				t.Fatalf("live feed ended: %v", err)
			}
			line = strings.TrimRight(line, "\n")
			if line == "" {
				break
			}
			k, v, _ := strings.Cut(line, ": ")
			switch k {
			case "event":
				m.event = v
			case "id":
				m.id = v
			case "data":
				m.data += v
			}
		}
		if m.event != "ping" && m.event != "" {
			return m
		}
	}
}

// nextEvent reads messages until an event, failing on anything but
// events and the ready marker.
func (s *sseStream) nextEvent(t *testing.T) trellis.LiveEvent {
	t.Helper()
	for {
		m := s.next(t)
		switch m.event {
		case "ready":
			continue
		case "event":
			var ev trellis.LiveEvent
			if err := json.Unmarshal([]byte(m.data), &ev); err != nil {
				t.Fatalf("event %s: %v", m.data, err)
			}
			if want := ev.Stream + ":" + strconv.FormatUint(ev.Seq, 10); m.id != want {
				t.Errorf("id %q, want %q", m.id, want)
			}
			return ev
		default:
			t.Fatalf("unexpected %s %s", m.event, m.data)
		}
	}
}

// TestLiveFeed: the live tail of the log over server-sent events: hello,
// the backlog (tail), ready, then events as they are appended; filters by
// stream and type; payloads only when asked for; resuming after a
// position delivers exactly what followed it.
func TestLiveFeed(t *testing.T) {
	t.Parallel()
	b := setup(t)
	first := b.addTask(t, trellis.AddTaskRequest{Objective: "before the feed"})

	s := b.openLive(t, "stream=queue&tail=10&payloads=true")
	hello := s.next(t)
	if hello.event != "hello" || !strings.Contains(hello.data, `"TRELLIS_QUEUE":0`) {
		t.Fatalf("hello = %+v", hello)
	}
	ev := s.nextEvent(t)
	if ev.Type != "added" || ev.AggregateID != first.TaskID || ev.Stream != "TRELLIS_QUEUE" || ev.Seq != 1 {
		t.Fatalf("backlog event = %+v", ev)
	}
	var p struct{ Objective string }
	if err := json.Unmarshal(ev.Payload, &p); err != nil || p.Objective != "before the feed" {
		t.Fatalf("payload %s (%v)", ev.Payload, err)
	}
	if m := s.next(t); m.event != "ready" {
		t.Fatalf("after the backlog: %+v, want ready", m)
	}
	second := b.addTask(t, trellis.AddTaskRequest{Objective: "after the feed", Queue: "q2"})
	ev = s.nextEvent(t)
	if ev.Type != "added" || ev.AggregateID != second.TaskID || ev.Seq != 2 || !strings.HasPrefix(ev.Subject, "trellis.queue.q2.") {
		t.Fatalf("live event = %+v", ev)
	}

	// A type filter, without payloads: only claims and completions, the
	// payload left out; an actor filter: only w9's events.
	claims := b.openLive(t, "type=claimed,completed")
	byW9 := b.openLive(t, "actor=w9")
	for _, f := range []*sseStream{claims, byW9} {
		if m := f.next(t); m.event != "hello" {
			t.Fatalf("first message %+v", m)
		}
	}
	b.addTask(t, trellis.AddTaskRequest{Objective: "third"})
	claimed := b.claim(t, "", "w8")
	b.addTask(t, trellis.AddTaskRequest{Objective: "fourth"})
	claimed2 := b.claim(t, "", "w9")
	ev = claims.nextEvent(t)
	if ev.Type != "claimed" || ev.AggregateID != claimed.TaskID || ev.Actor != "w8" || ev.Payload != nil || !ev.PayloadOmitted || ev.PayloadBytes == 0 {
		t.Fatalf("type-filtered event = %+v", ev)
	}
	if ev = claims.nextEvent(t); ev.Type != "claimed" || ev.AggregateID != claimed2.TaskID {
		t.Fatalf("type-filtered event = %+v", ev)
	}
	if ev = byW9.nextEvent(t); ev.Type != "claimed" || ev.AggregateID != claimed2.TaskID || ev.Actor != "w9" {
		t.Fatalf("actor-filtered event = %+v", ev)
	}
	byTask := b.openLive(t, "aggregate="+claimed.TaskID)
	byTask.next(t)
	b.do(t, http.MethodPost, "/v1/queue/tasks/"+claimed2.TaskID+"/done", map[string]any{"worker": "w9", "what_was_done": "x"}).expect(t, http.StatusOK, nil)
	b.do(t, http.MethodPost, "/v1/queue/tasks/"+claimed.TaskID+"/done", map[string]any{"worker": "w8", "what_was_done": "y"}).expect(t, http.StatusOK, nil)
	if ev = byTask.nextEvent(t); ev.Type != "completed" || ev.AggregateID != claimed.TaskID {
		t.Fatalf("aggregate-filtered event = %+v", ev)
	}

	// Resume after the first event: the feed replays exactly what came
	// after it, in order, then goes on live.
	resumed := b.openLive(t, "stream=queue&after=queue:1")
	if m := resumed.next(t); m.event != "hello" || !strings.Contains(m.data, `"TRELLIS_QUEUE":1`) {
		t.Fatalf("hello = %+v", m)
	}
	for want := uint64(2); want <= b.lastSeq(t); want++ {
		if ev := resumed.nextEvent(t); ev.Seq != want {
			t.Fatalf("resumed event #%d, want #%d", ev.Seq, want)
		}
	}

	// since: from a time on. Everything was stored after a minute ago.
	sinceFeed := b.openLive(t, "stream=queue&since=1m")
	sinceFeed.next(t)
	if ev := sinceFeed.nextEvent(t); ev.Seq != 1 {
		t.Fatalf("since 1m: first event #%d, want #1", ev.Seq)
	}
}

// TestLiveFeedBadInput: a bad filter is refused before the stream starts,
// naming the parameter.
func TestLiveFeedBadInput(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, c := range []struct{ query, field, msg string }{
		{"stream=queues", "stream", "not a stream"},
		{"stream=queue,TRELLIS_NOPE", "stream", "not a stream"},
		{"tail=1001", "tail", "between 0 and 1000"},
		{"tail=-1", "tail", "between 0 and 1000"},
		{"tail=ten", "tail", "not an integer"},
		{"after=queue", "after", "stream:sequence"},
		{"after=queue:x", "after", "stream:sequence"},
		{"after=nope:3", "after", "not a stream"},
		{"since=yesterday", "since", "not a time"},
		{"since=-5m", "since", "not a time"},
		{"payloads=maybe", "payloads", "true or false"},
		{"type=a.b", "type", "not an event type"},
		{"type=claimed,", "type", "not an event type"},
		{"aggregate=" + strings.Repeat("x", 5000), "aggregate", "at most"},
		{"bogus=1", "bogus", "unknown query parameter"},
		{"tail=1&tail=2", "tail", "given 2 times"},
	} {
		b.do(t, http.MethodGet, "/v1/events/live?"+c.query, nil).expectError(t, http.StatusBadRequest, trellis.CodeInvalid, c.field, c.msg)
	}
	b.do(t, http.MethodPost, "/v1/events/live", nil).expectError(t, http.StatusMethodNotAllowed, trellis.CodeInvalid, "", "not allowed")
}

// TestLiveFeedLagAndResume: a client that stops reading while the log
// grows is told it lagged and the feed ends; resuming after the last
// sequence it received delivers the rest with no gap and no repeat.
func TestLiveFeedLagAndResume(t *testing.T) {
	t.Parallel()
	b := setup(t)
	s := b.openLive(t, "stream=queue&payloads=true")
	if m := s.next(t); m.event != "hello" {
		t.Fatalf("first message %+v", m)
	}
	// Thousands of 8 KiB events while nothing is read: more than the
	// socket buffers and the feed's buffer hold.
	big := strings.Repeat("x", 8<<10)
	for batch := range 4 {
		req := trellis.AddManyRequest{}
		for i := range 1000 {
			req.Tasks = append(req.Tasks, trellis.AddTaskRequest{Objective: big + strconv.Itoa(batch*1000+i)})
		}
		if _, err := b.svc.AddMany(b.ctx, req); err != nil {
			t.Fatal(err)
		}
	}
	last := b.lastSeq(t)
	var got uint64
	for lagged := false; !lagged; {
		m := s.next(t)
		switch m.event {
		case "event":
			var ev trellis.LiveEvent
			if err := json.Unmarshal([]byte(m.data), &ev); err != nil {
				t.Fatal(err)
			}
			if ev.Seq != got+1 {
				t.Fatalf("event #%d after #%d", ev.Seq, got)
			}
			got = ev.Seq
		case "lagged":
			lagged = true
		case "ready":
		default:
			t.Fatalf("unexpected %+v", m)
		}
	}
	if got >= last {
		t.Fatalf("lagged after receiving everything (#%d of #%d)", got, last)
	}
	resumed := b.openLive(t, "stream=queue&after=queue:"+strconv.FormatUint(got, 10))
	resumed.next(t)
	for got < last {
		ev := resumed.nextEvent(t)
		if ev.Seq != got+1 {
			t.Fatalf("resumed: event #%d after #%d", ev.Seq, got)
		}
		got = ev.Seq
	}
}
