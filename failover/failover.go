package failover

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/trellis/trellis/events"
)

// Probe asks whether the service answers through nc: nil when it does.
// It must end with ctx.
type Probe func(ctx context.Context, nc *nats.Conn) error

// JetStream is a Probe asking for the account's JetStream information,
// which needs the meta group's leader: it fails from a node cut off from
// the quorum. Errors other than JetStream's unavailability (see
// events.IsUnavailable) are answers.
func JetStream(ctx context.Context, nc *nats.Conn) error {
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	if _, err := js.AccountInfo(ctx); err != nil && events.IsUnavailable(err) {
		return err
	}
	return nil
}

// StaleReplica is how long a stream's leader may go without hearing from
// a replica before Trellis's probes count that replica as cut off (the
// leader hears from each at least every second).
const StaleReplica = 3 * time.Second

// Stream returns a Probe that asks for JetStream's account information
// (see JetStream) and for the information of the named stream, and
// fails when the stream has no leader that answers, or when its leader
// has not heard from a majority of the stream's replicas within stale.
// A node cut off from the others that leads the meta group or the stream
// goes on answering both as if nothing happened until it steps down (10 s
// without a quorum, in nats-server); the replicas it no longer hears
// show at once. A stream that does not exist (yet) or is not replicated
// is no failure; a NATS user that may not ask for the stream's
// information (JetStream refused it, or the connection's last error is
// the server refusing that request's subject) is asked the account's
// alone from then on (each refusal is a permissions violation in the
// server's log).
func Stream(name string, stale time.Duration) Probe {
	replicas := StreamReplicas(name, stale)
	return func(ctx context.Context, nc *nats.Conn) error {
		if err := JetStream(ctx, nc); err != nil {
			return err
		}
		return replicas(ctx, nc)
	}
}

// StreamReplicas returns the part of Stream that asks for the named
// stream's information alone, for a caller that asks JetStream's account
// information itself.
func StreamReplicas(name string, stale time.Duration) Probe {
	var refused atomic.Bool
	return func(ctx context.Context, nc *nats.Conn) error {
		if refused.Load() {
			return nil
		}
		js, err := jetstream.New(nc)
		if err != nil {
			return err
		}
		st, err := js.Stream(ctx, name)
		if err != nil {
			if events.IsPermissionDenied(err) || refusedInfo(nc.LastError(), name) {
				refused.Store(true)
			}
			if events.IsUnavailable(err) {
				return err
			}
			return nil
		}
		ci := st.CachedInfo().Cluster
		if ci == nil || len(ci.Replicas) == 0 {
			return nil
		}
		if ci.Leader == "" {
			return fmt.Errorf("stream %s has no leader", name)
		}
		heard := 1 // the leader
		for _, r := range ci.Replicas {
			if r != nil && r.Active < stale {
				heard++
			}
		}
		if n := len(ci.Replicas) + 1; 2*heard <= n {
			return fmt.Errorf("stream %s: its leader %s heard from %d of its %d replicas within %s", name, ci.Leader, heard-1, n-1, stale)
		}
		return nil
	}
}

// refusedInfo reports whether last, a connection's last error, is the
// server refusing the connection the named stream's information. Other
// permissions violations stay on the connection too (a user denied the
// leader-election advisories, which Trellis tolerates): they do not stop
// the stream's probe.
func refusedInfo(last error, name string) bool {
	return last != nil && events.IsPermissionDenied(last) &&
		strings.Contains(strings.ToLower(last.Error()), strings.ToLower(streamInfoSubject+name))
}

// streamInfoSubject is the prefix of the JetStream API subject asking a
// stream's information.
const streamInfoSubject = "$JS.API.STREAM.INFO."

// Config configures a Mover. Zero values take the defaults.
type Config struct {
	// Probe is asked of the other servers before moving (required).
	Probe Probe
	// After is how many failures in a row, the connection up, start a
	// search for another server (default 3).
	After int
	// Every is how often Watch probes (default 1 s).
	Every time.Duration
	// Timeout bounds one probe, and the connection of a scout (default 2 s).
	Timeout time.Duration
	// FirstGap is the wait after a search before the next one (default
	// 2 s); it doubles per search up to MaxGap (default 30 s) and comes
	// back to FirstGap once the connection has answered Settled probes in
	// a row (default 30).
	FirstGap, MaxGap time.Duration
	Settled          int
	// Logger receives a line per move and per search that found no
	// server (default slog.Default()).
	Logger *slog.Logger
}

func (c Config) withDefaults() Config {
	if c.After <= 0 {
		c.After = 3
	}
	if c.Every <= 0 {
		c.Every = time.Second
	}
	if c.Timeout <= 0 {
		c.Timeout = 2 * time.Second
	}
	if c.FirstGap <= 0 {
		c.FirstGap = 2 * time.Second
	}
	if c.MaxGap < c.FirstGap {
		c.MaxGap = max(30*time.Second, c.FirstGap)
	}
	if c.Settled <= 0 {
		c.Settled = 30
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}

// Mover moves one connection; its methods are called from one goroutine.
type Mover struct {
	nc    *nats.Conn
	cfg   Config
	known []string // every server URL seen, in the order first seen
	turn  int      // where the next search starts among known

	fails, oks int
	gap        time.Duration
	next       time.Time // no search before

	// Searches and Moves count what the Mover did (read them after it
	// stopped, or from its goroutine).
	Searches, Moves int
}

// New returns a Mover for nc. A connection to an in-process server has
// nowhere to go: its Mover never moves.
func New(nc *nats.Conn, cfg Config) *Mover {
	m := &Mover{nc: nc, cfg: cfg.withDefaults()}
	m.gap = m.cfg.FirstGap
	m.learn()
	return m
}

// learn adds the servers the connection knows now (the configured ones
// and those the cluster announced) to those remembered: a node cut off
// from the others announces only itself, and nats.go then forgets the
// rest.
//
// The configured URLs are kept as given (with their user information,
// which nats.go sends when it connects to them); a server the cluster
// announced, which nats.go knows without it, takes that of the first
// configured URL that has some (the nodes of a cluster share their
// accounts).
func (m *Mover) learn() {
	configured := slices.Clone(m.nc.Opts.Servers)
	if m.nc.Opts.Url != "" {
		configured = append(configured, m.nc.Opts.Url)
	}
	var cred *url.Userinfo
	for _, u := range configured {
		if pu, err := url.Parse(u); err == nil && pu.User != nil {
			cred = pu.User
			break
		}
	}
	add := func(u string) {
		if !slices.ContainsFunc(m.known, func(k string) bool { return sameServer(k, u) }) {
			m.known = append(m.known, u)
		}
	}
	for _, u := range configured {
		add(u)
	}
	for _, u := range m.nc.Servers() {
		if pu, err := url.Parse(u); err == nil && pu.User == nil && cred != nil {
			pu.User = cred
			u = pu.String()
		}
		add(u)
	}
}

// CanMove reports whether the connection has somewhere to go: it is not
// to an in-process server, and the Mover knows another server. Without,
// probing it for a move is wasted (Watch does not).
func (m *Mover) CanMove() bool {
	m.learn()
	if m.nc.Opts.InProcessServer != nil {
		return false
	}
	current := m.nc.ConnectedUrl()
	return slices.ContainsFunc(m.known, func(k string) bool { return !sameServer(k, current) })
}

// Known returns the servers the Mover may move to or from (with their
// user information, if any).
func (m *Mover) Known() []string { return slices.Clone(m.known) }

// Observe takes one probe of the connection (nil: it answered) and, after
// Config.After failures in a row with the connection up, searches the
// other known servers and moves the connection to the first that
// answers. It returns the server moved to ("" when it did not move).
func (m *Mover) Observe(ctx context.Context, probeErr error) string {
	m.learn()
	if probeErr == nil {
		m.fails, m.oks = 0, m.oks+1
		if m.oks >= m.cfg.Settled {
			m.gap = m.cfg.FirstGap
		}
		return ""
	}
	m.fails, m.oks = m.fails+1, 0
	if m.fails < m.cfg.After || !m.nc.IsConnected() || m.nc.Opts.InProcessServer != nil || time.Now().Before(m.next) {
		return ""
	}
	current := m.nc.ConnectedUrl()
	var others []string
	for k := range m.known {
		u := m.known[(m.turn+k)%len(m.known)]
		if !sameServer(u, current) {
			others = append(others, u)
		}
	}
	if len(others) == 0 {
		return ""
	}
	m.Searches++
	defer func() {
		m.next = time.Now().Add(m.gap)
		m.gap = min(2*m.gap, m.cfg.MaxGap)
	}()
	for _, u := range others {
		if ctx.Err() != nil {
			return ""
		}
		err := m.scout(ctx, u)
		if err != nil {
			m.cfg.Logger.Debug("failover: another server does not answer either", "server", redact(u), "err", err)
			continue
		}
		// The current one may have come back meanwhile (an election
		// ended): stay then.
		if m.probe(ctx, m.nc) == nil {
			m.fails = 0
			return ""
		}
		if ctx.Err() != nil { // the probe above failed for that
			return ""
		}
		m.turn = (slices.Index(m.known, u) + 1) % len(m.known)
		if err := m.moveTo(u, current); err != nil {
			m.cfg.Logger.Warn("failover: could not move the NATS connection", "to", redact(u), "err", err)
			return ""
		}
		m.Moves++
		m.fails = 0
		m.cfg.Logger.Warn("failover: this NATS node does not answer (cut off from the quorum?); moving the connection to a server that does",
			"from", redact(current), "to", redact(u), "err", probeErr)
		return u
	}
	m.cfg.Logger.Warn("failover: no other NATS server answers either; staying", "servers", len(others), "next_search_in", m.gap)
	return ""
}

// scout probes server u on a connection of its own with the same
// options (credentials, TLS, inbox prefix), closed after.
func (m *Mover) scout(ctx context.Context, u string) error {
	o := m.nc.Opts
	o.Url, o.Servers = u, nil
	o.Name += " (failover scout)"
	o.AllowReconnect, o.MaxReconnect, o.RetryOnFailedConnect = false, 0, false
	o.NoRandomize, o.IgnoreDiscoveredServers = true, true
	o.Timeout = m.cfg.Timeout
	o.ClosedCB, o.DisconnectedCB, o.ReconnectedCB, o.DiscoveredServersCB, o.ConnectedCB = nil, nil, nil, nil, nil
	o.DisconnectedErrCB, o.ReconnectErrCB, o.AsyncErrorCB, o.LameDuckModeHandler, o.ReconnectToServerCB = nil, nil, nil, nil, nil
	sc, err := o.Connect()
	if err != nil {
		return err
	}
	defer sc.Close()
	return m.probe(ctx, sc)
}

func (m *Mover) probe(ctx context.Context, nc *nats.Conn) error {
	pctx, cancel := context.WithTimeout(ctx, m.cfg.Timeout)
	defer cancel()
	return m.cfg.Probe(pctx, nc)
}

// moveTo sets the connection's server pool (see pool) and reconnects.
func (m *Mover) moveTo(u, current string) error {
	if err := m.nc.SetServerPool(m.pool(u, current)); err != nil {
		return err
	}
	return m.nc.ForceReconnect()
}

// pool is the server pool a move to u sets: u first, then every other
// known server, the current one last.
//
// With TLS and no server name configured, a server known by its IP
// address is left out (u excepted): nats.go checks the certificate of a
// server the cluster announced by IP against the hostname it connected
// with, but SetServerPool forgets that hostname, and a later reconnect
// to such an entry would check the IP and fail with hostname-only
// certificates. Left out, the server is announced again by the node
// moved to, and nats.go adds it back as its own reconnects would. (A
// scout dials u as the moved connection will, so a server whose
// certificate does not match the address dialled is never moved to.)
func (m *Mover) pool(u, current string) []string {
	keep := func(k string) bool { return k == u || !m.tlsByName() || !hostIsIP(k) }
	pool := []string{u}
	for _, k := range m.known {
		if k != u && !sameServer(k, current) && keep(k) {
			pool = append(pool, k)
		}
	}
	for _, k := range m.known {
		if k != u && sameServer(k, current) && keep(k) {
			pool = append(pool, k)
		}
	}
	return pool
}

// tlsByName reports whether the connection uses TLS without a configured
// server name: nats.go then checks a certificate against the host of
// the server's URL, or for a server announced by IP against the
// hostname it connected with.
func (m *Mover) tlsByName() bool {
	o := m.nc.Opts
	if o.TLSConfig != nil && o.TLSConfig.ServerName != "" {
		return false
	}
	return o.Secure || o.TLSConfig != nil || m.nc.TLSRequired()
}

// hostIsIP reports whether a server URL's host is an IP address.
func hostIsIP(s string) bool {
	u, err := url.Parse(s)
	return err == nil && net.ParseIP(u.Hostname()) != nil
}

// sameServer compares two server URLs by host and port.
func sameServer(a, b string) bool { return hostPort(a) == hostPort(b) }

// Watch probes nc every Config.Every with Config.Probe until ctx ends,
// moving it as Observe does; it does not probe while there is nowhere
// to move to (see CanMove).
func Watch(ctx context.Context, nc *nats.Conn, cfg Config) {
	m := New(nc, cfg)
	t := time.NewTicker(m.cfg.Every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if !m.CanMove() {
			continue
		}
		var err error
		if nc.IsConnected() {
			err = m.probe(ctx, nc)
		} else {
			err = errNotConnected
		}
		if ctx.Err() != nil {
			return
		}
		m.Observe(ctx, err)
	}
}

var errNotConnected = errors.New("not connected")

// hostPort is a server URL's host and port (the URL itself when it does
// not parse).
func hostPort(s string) string {
	u, err := url.Parse(s)
	if err != nil || u.Host == "" {
		return s
	}
	return u.Host
}

// redact drops a URL's user information for the logs.
func redact(s string) string { return hostPort(s) }
