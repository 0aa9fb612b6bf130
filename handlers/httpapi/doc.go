// Package httpapi is Trellis's HTTP JSON API: a thin transport over the
// domains' interfaces (Service; the server passes handlers.Service). It
// decodes requests strictly, calls the service, and answers with JSON;
// every failure has one shape,
//
//	{"error":{"code":"invalid","field":"objective","message":"must not be empty"}}
//
// whose code is one of Trellis's stable error codes and whose HTTP status is
// trellis.HTTPStatus(code). Two transport-level failures use their own
// status with code "invalid": an oversized body (413, field "body") and a
// method a route does not allow (405, with an Allow header).
//
// Routes:
//
//	POST /v1/queue/tasks            trellis.AddTaskRequest       201 task
//	POST /v1/queue/tasks/batch      trellis.AddManyRequest       201 trellis.AddManyResult
//	POST /v1/queue/next             trellis.NextRequest          200 task, or null when none is queued
//	POST /v1/queue/tasks/{id}/done  trellis.DoneRequest fields   200 task
//	POST /v1/queue/tasks/{id}/fail  trellis.FailRequest fields   200 task
//	GET  /v1/queue/tasks?queue=&status=&since=&limit=&cursor=       200 trellis.TaskList (one page)
//	GET  /v1/queue/tasks/{id}                                    200 task
//	GET  /v1/queue/export                                        200 application/x-ndjson task packets
//	GET  /v1/audit?queue=|graph=|stream=&since=&until=&actor=&type=&limit=&cursor=
//	                                                             200 trellis.AuditPage (one page)
//	GET  /v1/audit?...&format=jsonl                              200 application/x-ndjson trellis.AuditEvent, every one
//	GET  /v1/audit/{id}                                          200 AuditResponse
//	POST /v1/queue/tasks/{id}/retry {"actor"} or no body          200 task
//	POST /v1/queue/tasks/{id}/cancel {"reason", "actor"} or no body 200 task (cancelled, or marked)
//	POST /v1/queue/tasks/{id}/heartbeat {"worker"} or no body     200 task (its claim's lease extended)
//	POST /v1/queue/tasks/{id}/release {"reason", "actor"} or no body 200 task (queued again)
//	POST /v1/schedules              trellis.ScheduleRequest      201 trellis.Schedule
//	GET  /v1/schedules                                           200 {"schedules": [trellis.Schedule]}
//	DELETE /v1/schedules/{name}                                  200 trellis.Schedule (removed)
//	GET  /v1/queues/{queue}/controls                             200 trellis.QueueControls
//	POST /v1/queues/{queue}/controls trellis.ControlRequest      200 trellis.QueueControls
//	POST /v1/vine/next              trellis.VineFileRequest      200 vine.Frontier
//	POST /v1/vine/read              trellis.VineReadRequest      200 trellis.VineReadResult
//	POST /v1/vine/write             trellis.VineWriteRequest     200 trellis.VineWriteResult
//	POST /v1/vine/claim             trellis.VineClaimRequest     200 trellis.VineClaimResult (task null when none is ready)
//	POST /v1/vine/expand            trellis.VineExpandRequest    200 trellis.VineWriteResult
//	POST /v1/vine/import            trellis.VineFileRequest      200 trellis.VineGraphInfo
//	GET  /v1/vine/graphs/{id}/export                             200 trellis.VineExportResult
//	POST /v1/replay                 {} or no body                200 handlers.ReplayResult
//	GET  /healthz                                                200 {"status":"ok"}
//
// plus the handlers of Config.Mounts, served as they are.
//
// Request bodies are decoded strictly: at most Config.MaxBodyBytes bytes of
// valid UTF-8 holding exactly one JSON object, whose keys are the request
// type's field names exactly (case-sensitive, each at most once); unknown
// fields and trailing data are rejected. Before any route or mount runs,
// every request passes the guard (guard.go): the body cap, the Host and
// Origin checks against DNS rebinding and cross-site requests, an
// application/json content type on bodies (415), and with Config.Auth a
// bearer token (401) and a role that covers the route (403).
//
// It decides nothing of the domains' (only whether a request is well formed
// and allowed for its token) and appends no events: the service it calls
// does.
package httpapi
