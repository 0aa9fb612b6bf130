package server

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/trellis/trellis/events"
	"github.com/trellis/trellis/failover"
	"github.com/trellis/trellis/handlers/natsapi"
)

// Quorum watch: a serve attached to a NATS node that lost its JetStream
// quorum (a partition, the other nodes down) cannot append, yet clients'
// API requests routed to it would wait out their timeouts. While
// JetStream does not answer, the server leaves the API's queue group so
// that the other servers answer; /healthz says 503 and the
// trellis_jetstream_quorum gauge 0. It joins again when JetStream answers.
//
// It also moves its NATS connection to another node of the cluster where
// JetStream answers, if it knows one (configured, or announced by the
// cluster; see package failover), and serves the API from there: a node
// cut off by a partition keeps its clients connected, and the serve would
// otherwise wait for the heal. The move asks more than the withdrawal
// (failover.Stream: the queue stream's leader must hear a majority of its
// replicas), since a cut-off node that leads goes on answering for 10 s.
const (
	// quorumEvery is how often JetStream is asked.
	quorumEvery = time.Second
	// quorumLoseAfter consecutive failures leave the queue group.
	quorumLoseAfter = 3
	// quorumRegainAfter consecutive answers join it again.
	quorumRegainAfter = 2
)

// errNoQuorum is what /healthz reports while the API is withdrawn.
var errNoQuorum = errors.New("JetStream has no quorum from this server's NATS node: API requests are left to other servers")

type quorumWatch struct {
	s     *Server
	scfg  natsapi.ServeConfig
	gauge prometheus.Gauge

	mu   sync.Mutex
	lost bool
	stop chan struct{}
	done chan struct{}

	// mover moves the connection off a node without the quorum;
	// withdrawn is the responder stopped on leaving the API (the move
	// waits until its subscriptions are gone). The mover and probe are
	// used by one search goroutine at a time (see run).
	mover     *failover.Mover
	probe     failover.Probe
	withdrawn *natsapi.Responder
}

func (s *Server) watchQuorum(scfg natsapi.ServeConfig) {
	q := &quorumWatch{s: s, scfg: scfg, stop: make(chan struct{}), done: make(chan struct{}),
		gauge: prometheus.NewGauge(prometheus.GaugeOpts{Name: "trellis_jetstream_quorum",
			Help: "1 while JetStream answers this server (it serves the NATS API), 0 while it has lost its quorum (API withdrawn)"})}
	q.probe = failover.StreamReplicas(events.StreamQueue, failover.StaleReplica)
	q.mover = failover.New(s.nc, failover.Config{Probe: q.probe, Logger: s.cfg.Logger})
	q.gauge.Set(1)
	if s.registry != nil {
		_ = s.registry.Register(q.gauge)
	}
	s.mu.Lock()
	s.quorum = q
	s.mu.Unlock()
	go q.run()
}

// ready reports errNoQuorum while the API is withdrawn.
func (q *quorumWatch) ready() error {
	if q == nil {
		return nil
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.lost {
		return errNoQuorum
	}
	return nil
}

func (q *quorumWatch) close() {
	close(q.stop)
	<-q.done
}

func (q *quorumWatch) run() {
	defer close(q.done)
	// A search for another node (scouts of a few seconds each) runs in a
	// goroutine of its own, one at a time, so that it delays neither the
	// API's withdrawal nor close; close cancels it and waits for it.
	searching := make(chan struct{}, 1)
	var search sync.WaitGroup
	defer search.Wait()
	runCtx, cancelRun := context.WithCancel(context.Background())
	defer cancelRun()
	go func() {
		select {
		case <-q.stop:
			cancelRun()
		case <-runCtx.Done():
		}
	}()
	t := time.NewTicker(quorumEvery)
	defer t.Stop()
	fails, oks := 0, 0
	cancelSearch := context.CancelFunc(func() {})
	for {
		select {
		case <-q.stop:
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_, err := q.s.store.JetStream().AccountInfo(ctx)
		cancel()
		if err != nil && !events.IsUnavailable(err) {
			err = nil // an answer, if not a happy one: JetStream is there
		}
		if err != nil {
			fails, oks = fails+1, 0
		} else {
			fails, oks = 0, oks+1
		}
		q.mu.Lock()
		lost := q.lost
		q.mu.Unlock()
		switch {
		case !lost && fails >= quorumLoseAfter:
			q.s.cfg.Logger.Warn("JetStream lost its quorum from this server: leaving the API queue group", "err", err)
			// A search under way must not move the connection while the
			// API's subscriptions drain (see below).
			cancelSearch()
			q.s.mu.Lock()
			if q.s.responder != nil {
				q.s.responder.Stop()
				q.withdrawn, q.s.responder = q.s.responder, nil
			}
			q.s.mu.Unlock()
			q.set(true)
			lost = true
		case lost && oks >= quorumRegainAfter:
			r, err := natsapi.Serve(q.s.nc, q.s.svc, q.scfg)
			if err != nil {
				q.s.cfg.Logger.Warn("JetStream answers again, but rejoining the API failed; will retry", "err", err)
				continue
			}
			q.s.mu.Lock()
			q.s.responder = r
			q.s.mu.Unlock()
			q.withdrawn = nil
			q.set(false)
			lost = false
			q.s.cfg.Logger.Info("JetStream answers again: serving the API")
		}
		// Look for a node where JetStream answers, and move there; not
		// while the API's subscriptions, withdrawn, are still draining (a
		// reconnect would subscribe them again on the new node).
		mayMove := !lost || q.withdrawn == nil || q.withdrawn.Drained()
		select {
		case searching <- struct{}{}:
			sctx, scancel := context.WithCancel(runCtx)
			cancelSearch = scancel
			search.Add(1)
			go func(err error) {
				defer func() { scancel(); <-searching; search.Done() }()
				q.observe(sctx, err, mayMove)
			}(err)
		default: // the last probe's search still runs
		}
	}
}

// observe tells the mover one probe: err, JetStream's account
// information (nil: it answered), and when that answered and there is
// somewhere to move to, the queue stream's replicas (see failover.Stream;
// the account's information is not asked twice).
// A failure is told only when mayMove; an answer always.
func (q *quorumWatch) observe(ctx context.Context, err error, mayMove bool) {
	if err == nil && q.mover.CanMove() {
		pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		err = q.probe(pctx, q.s.nc)
		cancel()
	}
	if ctx.Err() != nil { // cancelled: the probe's failure means nothing
		return
	}
	if err == nil || mayMove {
		q.mover.Observe(ctx, err)
	}
}

func (q *quorumWatch) set(lost bool) {
	q.mu.Lock()
	q.lost = lost
	q.mu.Unlock()
	if lost {
		q.gauge.Set(0)
	} else {
		q.gauge.Set(1)
	}
}
