package natsapi

// The request and reply bodies that have no type in the root package,
// under the names the Go side of this API (package client) builds and
// decodes them by. Each is declared, unexported, beside the operations
// that decode it.
type (
	// ReplyError is the error of a reply: {"error": {"code", "field", "message"}}.
	ReplyError = replyError
	// ShowRequest names one queue task (OpQueueShow).
	ShowRequest = showRequest
	// ControlsRequest names one queue (OpControls).
	ControlsRequest = controlsRequest
	// ChunkRequest names one chunk (OpChunk).
	ChunkRequest = chunkRequest
	// AgentTaskRequest names one agent task by name or id (OpTaskShow,
	// OpTaskContext).
	AgentTaskRequest = taskRequest
	// AuditRequest names the aggregate to audit (OpAudit).
	AuditRequest = auditRequest
	// IngestRequest names a directory the server ingests (OpIngest).
	IngestRequest = ingestRequest
	// PrepareRequest readies a queue for a pool (OpQueuePrepare).
	PrepareRequest = prepareRequest
	// ClaimRequest asks for one leased claim (OpQueueClaim).
	ClaimRequest = claimRequest
	// ClaimResult is a leased claim (OpQueueClaim).
	ClaimResult = claimResult
	// LeaseResult answers a prepare and a heartbeat with the queue's lease.
	LeaseResult = leaseResult
	// LeaseRequest names a task's lease (OpQueueHeartbeat, OpQueueAck).
	LeaseRequest = leaseRequest
	// ReleaseRequest gives a claimed task back (OpQueueRelease).
	ReleaseRequest = releaseRequest
	// TokenCreateRequest asks for a new token (OpTokenCreate).
	TokenCreateRequest = tokenCreateRequest
	// TokenNameRequest names a token (OpTokenRevoke).
	TokenNameRequest = tokenNameRequest
	// WorkflowShowRequest names one workflow run (OpWorkflowShow).
	WorkflowShowRequest = workflowShowRequest
)

// The headers of a streamed export's messages (OpQueueExport): each part
// carries its sequence number, the empty last one the end mark.
const (
	HeaderExportSeq = headerExportSeq
	HeaderExportEnd = headerExportEnd
)
