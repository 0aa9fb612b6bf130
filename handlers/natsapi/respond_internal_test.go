package natsapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/trellis/trellis/events/eventstest"
)

// A reply larger than the server's max_payload is answered with an error
// saying so, not left unanswered for the caller's timeout.
func TestRespondOverMaxPayload(t *testing.T) {
	t.Parallel()
	b := eventstest.Start(t)
	big := strings.Repeat("x", int(b.Conn.MaxPayload())+1)
	sub, err := b.Conn.Subscribe("test.big", func(m *nats.Msg) {
		respond(m, map[string]string{"data": big}, nil, slog.New(slog.DiscardHandler))
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	res, err := b.Conn.Request("test.big", nil, 5*time.Second)
	if err != nil {
		t.Fatalf("no answer: %v", err)
	}
	var r reply
	if err := json.Unmarshal(res.Data, &r); err != nil || r.Error == nil || !strings.Contains(r.Error.Message, "max_payload") {
		t.Fatalf("reply %.200s (%v); want an error naming max_payload", res.Data, err)
	}
}

// An internal error reaches the caller as "internal" with a reference id
// only; the detail (a path, a subject) goes to the server's log under it.
func TestRespondHidesInternalDetail(t *testing.T) {
	t.Parallel()
	b := eventstest.Start(t)
	var logged bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logged, nil))
	sub, err := b.Conn.Subscribe("test.internal", func(m *nats.Msg) {
		respond(m, nil, errors.New("open /srv/trellis/secret.env: permission denied"), log)
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	res, err := b.Conn.Request("test.internal", nil, 5*time.Second)
	if err != nil {
		t.Fatalf("no answer: %v", err)
	}
	var r reply
	if err := json.Unmarshal(res.Data, &r); err != nil || r.Error == nil {
		t.Fatalf("reply %s (%v)", res.Data, err)
	}
	if r.Error.Code != "internal" || strings.Contains(r.Error.Message, "secret.env") || !strings.Contains(r.Error.Message, "ref ") {
		t.Fatalf("the caller sees %+v; want internal with a reference and no detail", r.Error)
	}
	ref := strings.TrimRight(strings.Fields(r.Error.Message[strings.Index(r.Error.Message, "ref ")+4:])[0], ");,")
	if !strings.Contains(logged.String(), ref) || !strings.Contains(logged.String(), "secret.env") {
		t.Fatalf("the log %q lacks reference %s or the detail", logged.String(), ref)
	}
}
