package mcpapi

import (
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// DefaultWorker is the worker id of a call that names none on a transport
// without session ids (stdio): one stdio server serves one agent, so its
// claims belong to "mcp" even across restarts.
const DefaultWorker = "mcp"

// maxWorkerLen is trellis.ValidateWorkerID's length limit.
const maxWorkerLen = 128

// workerFor returns the worker a call acts as: explicit when the caller
// named one (validated later by the service), else "mcp:" plus the MCP
// session id, else DefaultWorker. Characters a worker id may not hold are
// replaced by '_' and the result is cut to the id length limit, so a custom
// session-id scheme never makes the default invalid.
func workerFor(req *mcp.CallToolRequest, explicit string) string {
	if explicit != "" {
		return explicit
	}
	if req == nil || req.Session == nil || req.Session.ID() == "" {
		return DefaultWorker
	}
	id := strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9',
			strings.ContainsRune("_.:@/+-", r):
			return r
		}
		return '_'
	}, req.Session.ID())
	w := DefaultWorker + ":" + id
	if len(w) > maxWorkerLen {
		w = w[:maxWorkerLen]
	}
	return w
}
