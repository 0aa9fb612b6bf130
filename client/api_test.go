package client_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/client"
	"github.com/trellis/trellis/events/eventstest"
	"github.com/trellis/trellis/handlers/natsapi"
)

func TestNoServerIsUnavailable(t *testing.T) {
	t.Parallel()
	b := eventstest.Start(t)
	c := client.NewAPI(b.Conn, time.Second)
	if _, err := c.Ping(context.Background()); trellis.ErrorCode(err) != trellis.CodeUnavailable {
		t.Fatalf("ping with no server: %v; want unavailable", err)
	}
}

// A call in flight when the server that holds it dies ends with
// unavailable as soon as nothing can answer it, not after the request
// timeout (here a minute: the test would fail on the message if the call
// waited it out).
func TestCallInFlightWhenTheServerDies(t *testing.T) {
	t.Parallel()
	for _, how := range []string{"server process gone", "nats gone"} {
		t.Run(how, func(t *testing.T) {
			t.Parallel()
			b := eventstest.Start(t)
			// A stand-in server: answers pings, takes the add and never
			// replies (it dies while working on it).
			srvConn, err := nats.Connect(b.Server.ClientURL())
			if err != nil {
				t.Fatal(err)
			}
			defer srvConn.Close()
			got := make(chan struct{}, 1)
			ping, _ := srvConn.Subscribe(natsapi.Prefix+natsapi.OpPing, func(m *nats.Msg) { _ = m.Respond([]byte(`{"result":{}}`)) })
			add, _ := srvConn.Subscribe(natsapi.Prefix+natsapi.OpQueueAdd, func(*nats.Msg) { got <- struct{}{} })
			_ = srvConn.Flush()
			nc, err := nats.Connect(b.Server.ClientURL(), nats.MaxReconnects(-1), nats.ReconnectWait(100*time.Millisecond))
			if err != nil {
				t.Fatal(err)
			}
			defer nc.Close()
			client := client.NewAPI(nc, time.Minute)
			go func() {
				<-got
				if how == "nats gone" {
					b.Server.Shutdown()
					return
				}
				_ = ping.Unsubscribe()
				_ = add.Unsubscribe()
				_ = srvConn.Flush()
			}()
			_, err = client.Add(context.Background(), trellis.AddTaskRequest{Objective: "in flight"})
			want := map[string]string{"server process gone": "no trellis server answers any more", "nats gone": "lost the connection to NATS"}[how]
			if trellis.ErrorCode(err) != trellis.CodeUnavailable || !strings.Contains(err.Error(), want) {
				t.Fatalf("add = %v; want unavailable: %s", err, want)
			}
		})
	}
}
