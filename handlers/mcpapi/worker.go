package mcpapi

import (
	"fmt"
	"os"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/auth"
	"github.com/trellis/trellis/events"
)

// HeaderWorker is the HTTP header with which a client of the streamable
// HTTP endpoint names the worker its calls act as (the URL parameter
// ?worker= does the same). It must be a worker id.
const HeaderWorker = "X-Trellis-Worker"

// remoteHostHeader carries the client's remote host from HTTPHandler to
// the tool handlers, which see only the request's headers. HTTPHandler
// replaces whatever a client sends in it.
const remoteHostHeader = "X-Trellis-Remote-Host"

// identityHeader carries the authenticated caller from HTTPHandler to the
// tool handlers (auth.Identity.Encode). HTTPHandler replaces whatever a
// client sends in it.
const identityHeader = "X-Trellis-Identity"

// callerOf returns the authenticated caller of a call over HTTP.
func callerOf(req *mcp.CallToolRequest) (auth.Identity, bool) {
	if req == nil || req.Extra == nil || req.Extra.Header == nil {
		return auth.Identity{}, false
	}
	v := req.Extra.Header.Get(identityHeader)
	if v == "" {
		return auth.Identity{}, false
	}
	return auth.DecodeIdentity(v)
}

// Lengths of the parts of a derived identity, so that one always fits a
// worker id (at most 128 characters).
const (
	maxClientLen = 40
	maxHostLen   = 64
	maxWorkerLen = 128
)

// identity decides who a call acts as when it names no worker: the
// default worker of queue_next, queue_done, queue_fail and vine_claim, the
// actor of vine_write and vine_expand, and the default observation session
// of observe and consolidate.
type identity struct {
	local string // the configured worker of calls not over HTTP ("" derives one)
	host  string // this machine's name
	ppid  int    // the process that started this one: the agent client of `trellis mcp`
}

// newIdentity returns the identity decisions of a server whose calls not
// over HTTP act as worker, or when it is empty as derived from this
// process (host name and parent process).
func newIdentity(worker string) identity {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "localhost"
	}
	return identity{local: worker, host: host, ppid: os.Getppid()}
}

// of returns who a call acts as by default. It is the one place where that
// is decided:
//
//   - over HTTP, the worker the client named (X-Trellis-Worker or ?worker=,
//     validated by HTTPHandler), else "mcp:<client name>@<remote host>":
//     the client name from its initialize request, the host it connects
//     from. A client that reconnects (a new MCP session) keeps it; another
//     client program, or the same one on another host, gets another one.
//     Two instances of one client program on one host share it unless they
//     name themselves.
//   - otherwise (stdio), the configured worker (TRELLIS_WORKER), else
//     "mcp:<client name>@<host>:<parent pid>": the parent is the agent
//     client that started `trellis mcp`, so a server it restarts keeps the
//     identity and the servers of two clients differ.
//
// With authentication on, the token's name comes first: a call over HTTP
// acts as the token's name, or as the slot of it ("<name>/<slot>") the
// client named with X-Trellis-Worker.
func (id identity) of(req *mcp.CallToolRequest) string {
	if caller, ok := callerOf(req); ok {
		if w := req.Extra.Header.Get(HeaderWorker); w != "" && events.ActsAs(caller.Name, w) {
			return w
		}
		return caller.Name
	}
	client := "client"
	if req != nil && req.Session != nil {
		if p := req.Session.InitializeParams(); p != nil && p.ClientInfo != nil && p.ClientInfo.Name != "" {
			client = clean(p.ClientInfo.Name, "_.+-", maxClientLen)
		}
	}
	if req != nil && req.Extra != nil && req.Extra.Header != nil {
		h := req.Extra.Header
		if w := h.Get(HeaderWorker); w != "" {
			return w
		}
		host := h.Get(remoteHostHeader)
		if host == "" {
			host = "http"
		}
		return "mcp:" + client + "@" + clean(host, "_.:-", maxHostLen)
	}
	if id.local != "" {
		return id.local
	}
	return fmt.Sprintf("mcp:%s@%s:%d", client, clean(id.host, "_.-", maxHostLen), id.ppid)
}

// worker returns the worker a call acts as: explicit when the caller named
// one (validated later by the service), else the call's identity.
func (id identity) worker(req *mcp.CallToolRequest, explicit string) string {
	if explicit != "" {
		return explicit
	}
	return cut(id.of(req), maxWorkerLen)
}

// session returns the observation session of a call: explicit when the
// caller named one (validated by the service), else the call's identity in
// the session alphabet (no '/' or '+').
func (id identity) session(req *mcp.CallToolRequest, explicit string) string {
	if explicit != "" {
		return explicit
	}
	return clean(id.of(req), "_.:@-", 128)
}

// clean keeps ASCII letters, digits and the characters of extra in s,
// replaces every other character by '_', and cuts the result to n bytes.
func clean(s, extra string, n int) string {
	return cut(strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', strings.ContainsRune(extra, r):
			return r
		}
		return '_'
	}, s), n)
}

func cut(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// checkWorker validates a worker named outside the tool arguments (a
// header, a URL parameter, the environment): an invalid-input error
// naming source when w is not a worker id.
func checkWorker(source, w string) error {
	if err := trellis.ValidateWorkerID(w); err != nil {
		return trellis.FieldError(source, "%q is not a worker id: use 1-128 characters of A-Z a-z 0-9 _ . : @ / + -", w)
	}
	return nil
}
