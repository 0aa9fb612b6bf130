package natsapi

import (
	"encoding/json"
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
