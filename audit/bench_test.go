package audit_test

import (
	"context"
	"fmt"
	"io"
	"testing"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/audit"
	"github.com/trellis/trellis/events/eventstest"
	"github.com/trellis/trellis/handlers"
)

// benchLog fills a fresh log with tasks tasks in queue "jobs", a quarter
// of them claimed (so half the events are chain links).
func benchLog(b *testing.B, tasks int) *handlers.Service {
	b.Helper()
	nb := eventstest.Start(b)
	svc := handlers.NewService(nb.Store, handlers.ServiceConfig{DataDir: b.TempDir()})
	ctx := context.Background()
	for done := 0; done < tasks; done += 1000 {
		var req trellis.AddManyRequest
		for i := 0; i < min(1000, tasks-done); i++ {
			req.Tasks = append(req.Tasks, trellis.AddTaskRequest{Queue: "jobs", Objective: fmt.Sprintf("task %d", done+i)})
		}
		if _, err := svc.AddMany(ctx, req); err != nil {
			b.Fatal(err)
		}
	}
	for i := 0; i < tasks/4; i++ {
		if _, err := svc.Next(ctx, trellis.NextRequest{Queue: "jobs", Worker: "w"}); err != nil {
			b.Fatal(err)
		}
	}
	return svc
}

// BenchmarkAuditVerify: audit verify over logs of two sizes, in events/s.
// (The embedded NATS server shares the process, so its heap says nothing
// about the client's: the README gives the CLI's own memory, measured in
// a process of its own.)
func BenchmarkAuditVerify(b *testing.B) {
	for _, tasks := range []int{4000, 16000} {
		b.Run(fmt.Sprintf("tasks=%d", tasks), func(b *testing.B) {
			svc := benchLog(b, tasks)
			var evs uint64
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				rep, err := audit.Verify(context.Background(), svc.Store(), audit.VerifyOptions{}, func(audit.Finding) error { return nil })
				if err != nil || !rep.OK {
					b.Fatalf("verify: %v %+v", err, rep)
				}
				evs = rep.Streams[0].Events
			}
			b.ReportMetric(float64(evs)*float64(b.N)/b.Elapsed().Seconds(), "events/s")
		})
	}
}

// BenchmarkAuditQuery: a whole queue's events through the paged query
// (as the CLI and HTTP stream them), in events/s.
func BenchmarkAuditQuery(b *testing.B) {
	for _, tasks := range []int{4000, 16000} {
		b.Run(fmt.Sprintf("tasks=%d", tasks), func(b *testing.B) {
			svc := benchLog(b, tasks)
			var n int
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				n = 0
				err := audit.All(context.Background(), svc, trellis.AuditQuery{Queue: "jobs"}, func(ev trellis.AuditEvent) error {
					n++
					_, _ = fmt.Fprintln(io.Discard, ev.ID)
					return nil
				})
				if err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "events/s")
		})
	}
}
