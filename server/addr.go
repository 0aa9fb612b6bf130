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
