package natsapi

// Subject prefix and operations of the NATS API.
const (
	// Prefix starts every API subject.
	Prefix = "trellis.api.v1."
	// QueueGroup is the queue group every server subscribes with.
	QueueGroup = "trellis-api"

	OpPing     = "ping"
	OpQueueAdd = "queue.add"
	// OpQueueAddMany adds several tasks (trellis.AddManyRequest).
	OpQueueAddMany = "queue.add_many"
	OpQueueNext    = "queue.next"
	OpQueueDone    = "queue.done"
	OpQueueFail    = "queue.fail"
	OpQueueShow    = "queue.show"
	OpQueueList    = "queue.list"
	OpReplay       = "replay"
	OpRetry        = "queue.retry"
	OpControl      = "queue.control"
	OpControls     = "queue.controls"
	OpCancel       = "queue.cancel"
	// OpQueueReleaseClaim is an operator's release of a claimed task
	// (trellis.ReleaseRequest). An agent's heartbeat on a claim made by
	// queue next is OpQueueHeartbeat without a lease
	// (trellis.HeartbeatRequest).
	OpQueueReleaseClaim = "queue.release_claim"
	OpScheduleAdd       = "schedule.add"
	OpScheduleList      = "schedule.list"
	OpScheduleRemove    = "schedule.remove"

	OpVineNext   = "vine.next"
	OpVineRead   = "vine.read"
	OpVineWrite  = "vine.write"
	OpVineClaim  = "vine.claim"
	OpVineExpand = "vine.expand"
	OpVineImport = "vine.import"
	OpVineExport = "vine.export"

	OpTaskCreate        = "task.create"
	OpTaskJoin          = "task.join"
	OpTaskObjective     = "task.objective"
	OpTaskCompleteAgent = "task.complete_agent"
	OpTaskComplete      = "task.complete"
	OpTaskShow          = "task.show"
	OpTaskList          = "task.list"
	OpTaskContext       = "task.context"
	OpObserve           = "memory.observe"
	OpConsolidate       = "memory.consolidate"
	OpFacts             = "memory.facts"
	OpHistory           = "memory.history"

	OpSearch  = "code.search"
	OpChunk   = "code.chunk"
	OpExplain = "code.explain"
	OpIngest  = "code.ingest"

	// A remote worker pool's leased claims (see lease.go).
	OpQueuePrepare   = "queue.prepare"
	OpQueueClaim     = "queue.claim"
	OpQueueHeartbeat = "queue.heartbeat"
	OpQueueAck       = "queue.ack"
	OpQueueRelease   = "queue.release"

	// Reads of the log that a client without JetStream access needs.
	OpAudit       = "audit"
	OpQueueExport = "queue.export"

	// OpAuditQuery answers one page of an audit query (trellis.AuditQuery).
	OpAuditQuery = "audit.query"
	// OpAuditProjections answers how far the server's projections have
	// folded the log (trellis.ProjectionStatus).
	OpAuditProjections = "audit.projections"

	// Token management and who-am-I.
	OpTokenCreate = "token.create"
	OpTokenList   = "token.list"
	OpTokenRevoke = "token.revoke"
	OpWhoami      = "token.whoami"
)

// HeaderAuthorization carries a request's token: "Bearer <token>".
const HeaderAuthorization = "Authorization"

// HeaderDeadline carries the time (RFC 3339, UTC) after which the caller
// no longer waits for a request's answer. A server that receives the
// request later (a client's reconnect buffer replayed to a restarted
// server, a server slow to pick it up) refuses it without applying it,
// and one that receives it in time stops working on it at the deadline.
// Caller and server clocks must agree to well within the request's
// timeout.
const HeaderDeadline = "Trellis-Deadline"

// reply is the body of every answer.
type reply struct {
	Result any         `json:"result,omitempty"`
	Error  *ReplyError `json:"error,omitempty"`
}

// PingInfo is what a server answers to ping.
type PingInfo struct {
	Version string `json:"version"`
	PID     int    `json:"pid"`
	DataDir string `json:"data_dir"`
	HTTPURL string `json:"http_url,omitempty"`
	// Workspaces are the server's VINE workspace roots.
	Workspaces []string `json:"workspaces,omitempty"`
}
