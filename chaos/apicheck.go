package chaos

import (
	"context"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/trellis/trellis/handlers/natsapi"
)

// apiPings is how many pings pingAPI sends: with a dead member in the
// API's queue group (half of it, when each of two serves has one), the
// chance that all of them find a live one is 1 in 4,096.
const apiPings = 12

// pingAPI waits for the Trellis API to answer a ping (a minute at most:
// else every ping counts as unanswered), then sends apiPings pings (any
// serve answers, as the queue group picks) and counts those not answered
// within 5 s: once the cluster is whole again, each one must be. A serve that left the API
// while its node was down and joined it again once left a dead
// subscription behind that swallowed its share of the requests
// (TestStopWhileReconnectingLeavesNoGhost in handlers/natsapi); the
// log read retries, so this check is what shows such a defect.
func pingAPI(ctx context.Context, urls string) (unanswered int, err error) {
	nc, err := nats.Connect(urls, nats.Timeout(5*time.Second))
	if err != nil {
		return 0, fmt.Errorf("ping the API: %w", err)
	}
	defer nc.Close()
	// First the API must be there at all (a serve joins it again once
	// JetStream answers it twice in a row).
	if err := waitFor(ctx, time.Minute, func() bool {
		_, err := nc.Request(natsapi.Prefix+natsapi.OpPing, []byte("{}"), 5*time.Second)
		return err == nil
	}); err != nil {
		return apiPings, nil
	}
	for range apiPings {
		pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		_, err := nc.RequestWithContext(pctx, natsapi.Prefix+natsapi.OpPing, []byte("{}"))
		cancel()
		if ctx.Err() != nil {
			return unanswered, ctx.Err()
		}
		if err != nil {
			unanswered++
		}
	}
	return unanswered, nil
}
