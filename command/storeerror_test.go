package command

import (
	"context"
	"fmt"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/trellis/trellis"
)

// Infrastructure errors that mean "JetStream could not answer now" (a
// consumer electing its leader answers no responders, a server restarting
// drops the connection) are unavailable (exit 7, worth retrying), never
// internal.
func TestStoreErrorCodes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		err  error
		want trellis.Code
	}{
		{nats.ErrNoResponders, trellis.CodeUnavailable},
		{fmt.Errorf("fetch: %w", nats.ErrNoResponders), trellis.CodeUnavailable},
		{nats.ErrTimeout, trellis.CodeUnavailable},
		{context.DeadlineExceeded, trellis.CodeUnavailable},
		{context.Canceled, trellis.CodeUnavailable},
		{jetstream.ErrNoStreamResponse, trellis.CodeUnavailable},
		{jetstream.ErrNoHeartbeat, trellis.CodeUnavailable},
		{nats.ErrConnectionClosed, trellis.CodeUnavailable},
		{nats.ErrConnectionReconnecting, trellis.CodeUnavailable},
		{nats.ErrDisconnected, trellis.CodeUnavailable},
		{jetstream.ErrJetStreamNotEnabled, trellis.CodeUnavailable},
		{fmt.Errorf("disk full"), trellis.CodeInternal},
		{trellis.FieldError("x", "bad"), trellis.CodeInvalid},
	} {
		if got := trellis.ErrorCode(StoreError("op", tc.err)); got != tc.want {
			t.Errorf("command.StoreError(%v) = %s, want %s", tc.err, got, tc.want)
		}
	}
}
