package trellis

// Domains is every domain's interface in one: the queue with its
// administration, agent leases and schedules, VINE graphs, agent memory,
// code memory and audit queries. The composed server-side service
// (handlers.Service) and the Go client (client.API) both implement it;
// the HTTP and NATS transports take it plus what each needs beside it.
type Domains interface {
	QueueService
	QueueAdmin
	QueueLeases
	ScheduleService
	VineService
	MemoryService
	CodeService
	AuditService
}
