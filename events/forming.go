package events

import (
	"context"
	"fmt"
	"time"
)

// clusterFormWait bounds how long whileClusterForms waits for a cluster
// (a cluster with fewer nodes than the replicas asked for never forms).
const clusterFormWait = 60 * time.Second

// storeCreateTries bounds how often whileClusterForms sends a create
// again after the server failed to create the stream's store (see
// storeCreateFailed); a failure that lasts (a full disk, a directory the
// server may not write) is reported after them.
const storeCreateTries = 5

// whileClusterForms runs op, each try bounded by the request timeout,
// and tries again while the error says the cluster is still forming (a
// node not up yet: no JetStream meta leader, no peers for every replica,
// a request that times out), for at most clusterFormWait or until ctx
// ends. Starting Trellis beside a cluster that is starting too then waits
// for it instead of failing.
//
// A create the server answers with "error creating store for stream" is
// sent again up to storeCreateTries times, 50 ms apart: deleting an
// account's last stream makes nats-server remove the account's emptied
// store directories in a goroutine of its own, which can race a create
// that follows at once (a features run that deletes the empty streams it
// found and starts Trellis).
func (s *Store) whileClusterForms(ctx context.Context, op func(context.Context) error) error {
	start := time.Now()
	storeTries := 1
	for {
		tctx, cancel := context.WithTimeout(ctx, s.cfg.RequestTimeout)
		err := op(tctx)
		cancel()
		if err == nil || ctx.Err() != nil {
			return err
		}
		if perr := permissionError(s.nc); perr != nil && jsClassOf(err) == jsUnanswered {
			// The server refused a subject and the request timed out:
			// waiting longer cannot help.
			return fmt.Errorf("%w: %w", perr, err)
		}
		wait := 250 * time.Millisecond
		switch {
		case storeCreateFailed(err) && storeTries < storeCreateTries:
			storeTries++
			wait = 50 * time.Millisecond
		case !clusterForming(err):
			return err
		}
		if waited := time.Since(start); waited >= clusterFormWait {
			return fmt.Errorf("waited %s for the NATS cluster to have JetStream and enough nodes for the replicas: %w", waited.Round(time.Second), err)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
	}
}
