package main

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/audit"
	"github.com/trellis/trellis/events"
)

// TestAuditVerifyProjectionsAheadOfTheLog reproduces the review with a raw
// JetStream client holding the servers' credentials, against a running
// server whose projections folded the log: the queue stream's newest
// events dropped (deleted, recreated and refilled with #1-#4 under their
// original message ids) while the board still shows both tasks done, and
// the agent-task stream deleted and recreated empty. `audit verify` asks
// the server how far each projection got and reports, for each, the
// stream and the projection that shows state the log no longer has.
func TestAuditVerifyProjectionsAheadOfTheLog(t *testing.T) {
	t.Parallel()
	data := t.TempDir()
	d := "--data=" + data
	srv := startServer(t, data)
	ctx := context.Background()
	store := srv.Store()
	lifecycle(t, d, "jobs", "w1")
	lifecycle(t, d, "jobs", "w2")
	if _, err := srv.Service().TaskCreate(ctx, trellis.AgentTaskCreateRequest{Name: "fix-auth", Objectives: []string{"fix it"}}); err != nil {
		t.Fatal(err)
	}
	if err := srv.Service().CatchUp(ctx); err != nil {
		t.Fatal(err)
	}
	if code, rep := verifyJSON(t, d); code != 0 {
		t.Fatalf("verify of the untouched log: exit %d %+v", code, rep.Findings)
	}
	js := store.JetStream()
	recreate := func(stream string) {
		t.Helper()
		st, err := js.Stream(ctx, stream)
		if err != nil {
			t.Fatal(err)
		}
		info, err := st.Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := js.DeleteStream(ctx, stream); err != nil {
			t.Fatal(err)
		}
		if _, err := js.CreateStream(ctx, info.Config); err != nil {
			t.Fatal(err)
		}
	}

	recs, _, err := store.Load(ctx, events.StreamQueue, "trellis.queue.jobs.>")
	if err != nil || len(recs) != 6 {
		t.Fatalf("load: %d %v", len(recs), err)
	}
	recreate(events.StreamQueue)
	for _, r := range recs[:4] {
		data, _ := json.Marshal(r.Envelope)
		if _, err := js.PublishMsg(ctx, &nats.Msg{Subject: r.Subject, Data: data, Header: nats.Header{nats.MsgIdHdr: []string{r.ID}}}); err != nil {
			t.Fatal(err)
		}
	}
	recreate(events.StreamTasks)

	// The board still shows both tasks done: state the log lost.
	var list trellis.TaskList
	mustJSON(t, cliOK(t, "queue", "list", d, "--json"), &list)
	if list.Counts["jobs"][trellis.StatusDone] != 2 {
		t.Fatalf("board after the tampering: %+v", list.Counts)
	}
	code, rep := verifyJSON(t, d)
	if code != 9 {
		t.Fatalf("verify after the tampering: exit %d %+v", code, rep.Findings)
	}
	for _, want := range []struct{ stream, projection string }{
		{events.StreamQueue, "board"}, {events.StreamTasks, "tasks"},
	} {
		found := false
		for _, f := range rep.Findings {
			if f.Kind == audit.FindingRemoved && f.Stream == want.stream && f.Projection == want.projection {
				found = true
			}
		}
		if !found {
			t.Errorf("no finding names projection %s of %s: %+v", want.projection, want.stream, rep.Findings)
		}
	}
}
