package natsapi

import "github.com/trellis/trellis"

// The request and reply bodies of the API that have no type in the root
// package: the server decodes and answers them here, and the Go side of
// the API (package client) builds and decodes them by the same types.

// ReplyError is the error of a reply: {"error": {"code", "field", "message"}}.
type ReplyError struct {
	Code    string `json:"code"`
	Field   string `json:"field,omitempty"`
	Message string `json:"message"`
}

// ShowRequest names one task.
type ShowRequest struct {
	TaskID string `json:"task_id"`
}

// ControlsRequest names one queue.
type ControlsRequest struct {
	Queue string `json:"queue"`
}

// ChunkRequest names one chunk.
type ChunkRequest struct {
	ChunkID string `json:"chunk_id"`
}

// AgentTaskRequest names one agent task (by name or id).
type AgentTaskRequest struct {
	Task string `json:"task"`
}

// AuditRequest names the aggregate to audit.
type AuditRequest struct {
	ID string `json:"id"`
}

// IngestRequest asks the server to ingest a directory it can read inside
// its workspace roots.
type IngestRequest struct {
	Root string `json:"root"`
	Repo string `json:"repo,omitempty"`
}

// PrepareRequest readies a queue for a pool.
type PrepareRequest struct {
	Queue   string `json:"queue"`
	LeaseMS int64  `json:"lease_ms"`
}

// ClaimRequest asks for one leased claim.
type ClaimRequest struct {
	Queue  string `json:"queue"`
	Worker string `json:"worker"`
	WaitMS int64  `json:"wait_ms"`
}

// ClaimResult is a leased claim (task null when none came) and the lease
// the queue's pools heartbeat for now.
type ClaimResult struct {
	Task    *trellis.Task `json:"task"`
	Lease   string        `json:"lease,omitempty"`
	LeaseMS int64         `json:"lease_ms,omitempty"`
}

// LeaseResult answers a prepare and a heartbeat: the lease the queue's
// pools heartbeat for now (it changes when a pool or an operator sets
// another; see taskqueue.Handler.SetLease).
type LeaseResult struct {
	LeaseMS int64 `json:"lease_ms"`
}

// LeaseRequest names a task's lease (heartbeat, ack). A heartbeat
// without a lease is an agent's (trellis.HeartbeatRequest).
type LeaseRequest struct {
	TaskID string `json:"task_id"`
	Worker string `json:"worker"`
	Lease  string `json:"lease"`
}

// ReleaseRequest gives a claimed task back.
type ReleaseRequest struct {
	TaskID string `json:"task_id"`
	Worker string `json:"worker"`
	Reason string `json:"reason"`
}

// TokenCreateRequest asks for a new token.
type TokenCreateRequest struct {
	Name   string   `json:"name"`
	Role   string   `json:"role"`
	Queues []string `json:"queues,omitempty"`
}

// TokenNameRequest names a token.
type TokenNameRequest struct {
	Name   string `json:"name"`
	Reason string `json:"reason,omitempty"`
}

// WorkflowShowRequest names one workflow run (OpWorkflowShow).
type WorkflowShowRequest struct {
	RunID string `json:"run_id"`
}
