package server

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"syscall"

	"github.com/trellis/trellis"
)

// checkAddr validates a listen address: host:port with a numeric port
// (0 picks a free one).
func checkAddr(field, addr string) error {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return trellis.FieldError(field, "%q is not a listen address host:port (%v)", addr, err)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return trellis.FieldError(field, "%q: the port must be a number from 0 to 65535 (0 picks a free one)", addr)
	}
	return nil
}

// listenError classifies a failure to listen: an address in use (or
// otherwise refused by the system) is unavailable, naming the address and
// the flag that moves it; anything else stays as it is.
func listenError(what, addr, flag string, err error) error {
	var opErr *net.OpError
	switch {
	case errors.Is(err, syscall.EADDRINUSE):
		return trellis.Errorf(trellis.CodeUnavailable,
			"%s address %s is in use by another process: stop it, or pick another address with %s (port 0 picks a free one): %w", what, addr, flag, err)
	case errors.As(err, &opErr):
		return trellis.Errorf(trellis.CodeUnavailable, "%s cannot listen on %s (%s): %w", what, addr, flag, err)
	}
	return fmt.Errorf("%s on %s: %w", what, addr, err)
}

// isLoopback reports whether a listen address binds loopback only
// (localhost, 127.0.0.0/8, ::1); "-" (no listener) counts as loopback.
func isLoopback(addr string) bool {
	if addr == "-" || addr == "" {
		return true
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// checkExposure refuses to listen on a non-loopback address without
// authentication, unless Insecure says so (serve then warns).
func checkExposure(cfg Config) error {
	if cfg.Auth || cfg.Insecure {
		return nil
	}
	if cfg.NATSURL == "" && !isLoopback(cfg.NATSAddr) {
		return trellis.FieldError("nats_addr", "%s is not a loopback address: listening there needs --auth "+
			"(tokens on every listener), or --insecure to accept anyone who can reach it", cfg.NATSAddr)
	}
	if cfg.HTTPAddr != "" && !isLoopback(cfg.HTTPAddr) {
		return trellis.FieldError("http_addr", "%s is not a loopback address: listening there needs --auth "+
			"(tokens on every listener), or --insecure to accept anyone who can reach it", cfg.HTTPAddr)
	}
	return nil
}

// Exposed reports whether the configuration listens on a non-loopback
// address.
func Exposed(cfg Config) bool {
	return (cfg.NATSURL == "" && !isLoopback(cfg.NATSAddr)) || (cfg.HTTPAddr != "" && !isLoopback(cfg.HTTPAddr))
}
