package natsapi_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/client"
	"github.com/trellis/trellis/events"
	"github.com/trellis/trellis/events/eventstest"
	"github.com/trellis/trellis/handlers"
	"github.com/trellis/trellis/handlers/natsapi"
)

type bundle struct {
	*eventstest.Bundle
	svc    *handlers.Service
	client *client.API
}

func setup(t *testing.T) *bundle {
	t.Helper()
	b := &bundle{Bundle: eventstest.Start(t)}
	b.svc = handlers.NewService(b.Store, handlers.ServiceConfig{DataDir: t.TempDir()})
	if err := b.svc.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.svc.Close() })
	r, err := natsapi.Serve(b.Conn, b.svc, natsapi.ServeConfig{Info: natsapi.PingInfo{Version: "test", DataDir: "/d"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Stop)
	nc, err := nats.Connect(b.Server.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	b.client = client.NewAPI(nc, 5*time.Second)
	return b
}

func TestClientLifecycle(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	info, err := b.client.Ping(ctx)
	if err != nil || info.Version != "test" || info.DataDir != "/d" {
		t.Fatalf("ping = %+v, %v", info, err)
	}
	task, err := b.client.Add(ctx, trellis.AddTaskRequest{Objective: "over nats", Inputs: []string{"a"}})
	if err != nil {
		t.Fatal(err)
	}
	got, err := b.client.Next(ctx, trellis.NextRequest{Worker: "w"})
	if err != nil || got == nil || got.TaskID != task.TaskID {
		t.Fatalf("next = %v, %v", got, err)
	}
	if none, err := b.client.Next(ctx, trellis.NextRequest{Worker: "w"}); err != nil || none != nil {
		t.Fatalf("empty next = %v, %v", none, err)
	}
	if _, err := b.client.Fail(ctx, trellis.FailRequest{TaskID: task.TaskID, Worker: "w", Error: "nope", Blockers: []string{"b"}}); err != nil {
		t.Fatal(err)
	}
	shown, err := b.client.Show(ctx, task.TaskID)
	if err != nil || shown.Status != trellis.StatusFailed || shown.Checkpoint.Error != "nope" {
		t.Fatalf("show = %+v, %v", shown, err)
	}
	l, err := b.client.List(ctx, trellis.ListRequest{Status: trellis.StatusFailed})
	if err != nil || len(l.Tasks) != 1 {
		t.Fatalf("list = %+v, %v", l, err)
	}
	// Pages over NATS: a second task, one row per page.
	task2, err := b.client.Add(ctx, trellis.AddTaskRequest{Objective: "second"})
	if err != nil {
		t.Fatal(err)
	}
	ids := []string{task.TaskID, task2.TaskID}
	slices.Sort(ids)
	p1, err := b.client.List(ctx, trellis.ListRequest{Limit: 1})
	if err != nil || len(p1.Tasks) != 1 || p1.Tasks[0].TaskID != ids[0] || p1.NextCursor == "" {
		t.Fatalf("page 1 = %+v, %v", p1, err)
	}
	p2, err := b.client.List(ctx, trellis.ListRequest{Limit: 1, Cursor: p1.NextCursor})
	if err != nil || len(p2.Tasks) != 1 || p2.Tasks[0].TaskID != ids[1] || p2.NextCursor != "" {
		t.Fatalf("page 2 = %+v, %v", p2, err)
	}
	if _, err := b.client.List(ctx, trellis.ListRequest{Cursor: "bogus"}); trellis.ErrorCode(err) != trellis.CodeInvalid {
		t.Fatalf("bad cursor over the client: %v; want invalid", err)
	}
	if _, err := b.client.Done(ctx, trellis.DoneRequest{TaskID: task.TaskID, Worker: "w", WhatWasDone: "x"}); trellis.ErrorCode(err) != trellis.CodeConflict {
		t.Fatalf("done after fail: %v; want conflict", err)
	}
	res, err := b.client.Replay(ctx)
	if err != nil || len(res.Projections) != 6 {
		t.Fatalf("replay = %+v, %v", res, err)
	}
}

// TestRawBadRequests sends malformed bodies straight to the API subjects:
// each answers a clear invalid error naming the field, and the log is
// untouched.
func TestRawBadRequests(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	before, err := b.Store.LastSeq(ctx, events.StreamQueue)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		op, body, field string
	}{
		{natsapi.OpQueueAdd, `{"objective":`, "body"},
		{natsapi.OpQueueAdd, `{"objective":"x","urgency":1}`, "urgency"},
		{natsapi.OpQueueAdd, `{"objective":"x","priority":9}`, "priority"},
		{natsapi.OpQueueAdd, `{"objective":"x","delay":"soon"}`, "delay"},
		{natsapi.OpQueueAdd, `{"objective":"x","after":["01JB0000000000000000000000"]}`, "after"},
		{natsapi.OpCancel, `{"task_id":"nope"}`, "task_id"},
		{natsapi.OpScheduleAdd, `{"name":"n","cron":"61 * * * *","objective":"x"}`, "cron"},
		{natsapi.OpScheduleAdd, `{"name":"n","every":"0s","objective":"x"}`, "every"},
		{natsapi.OpScheduleRemove, `{"name":"no such"}`, "name"},
		{natsapi.OpControl, `{"queue":"q","action":"rate","rate":"0/s"}`, "rate"},
		{natsapi.OpQueueAdd, "{\"objective\":\"\xff\"}", "body"},
		{natsapi.OpQueueAdd, `{"objective":""}`, "objective"},
		{natsapi.OpQueueAdd, `{"objective":"x","max_steps":-3}`, "max_steps"},
		{natsapi.OpQueueAdd, `{"objective":"x","max_steps":"3"}`, "max_steps"},
		{natsapi.OpQueueAdd, `[]`, "body"},
		{natsapi.OpQueueNext, `{}`, "worker"},
		{natsapi.OpQueueDone, `{"task_id":"nope","worker":"w","what_was_done":"x"}`, "task_id"},
		{natsapi.OpQueueShow, `{"task_id":"` + strings.Repeat("A", 26) + `x"}`, "task_id"},
		{natsapi.OpQueueList, `{"status":"weird"}`, "status"},
		{natsapi.OpQueueList, `{"limit":-1}`, "limit"},
		{natsapi.OpQueueList, `{"limit":1001}`, "limit"},
		{natsapi.OpQueueList, `{"limit":"10"}`, "limit"},
		{natsapi.OpQueueList, `{"cursor":"!!"}`, "cursor"},
		{natsapi.OpQueueList, `{"since":"last week"}`, "since"},
	}
	for _, c := range cases {
		msg, err := b.Conn.Request(natsapi.Prefix+c.op, []byte(c.body), 5*time.Second)
		if err != nil {
			t.Fatalf("%s %s: %v", c.op, c.body, err)
		}
		var reply struct {
			Error *trellis.Error `json:"error"`
		}
		if err := json.Unmarshal(msg.Data, &reply); err != nil || reply.Error == nil {
			t.Fatalf("%s %s: reply %s", c.op, c.body, msg.Data)
		}
		if reply.Error.Code != trellis.CodeInvalid || reply.Error.Field != c.field {
			t.Errorf("%s %s: %+v; want invalid on %s", c.op, c.body, reply.Error, c.field)
		}
	}
	// Over the NATS payload limit: the client refuses to send it.
	huge := trellis.AddTaskRequest{Objective: strings.Repeat("x", 2<<20)}
	if _, err := b.client.Add(ctx, huge); trellis.ErrorCode(err) != trellis.CodeInvalid {
		t.Fatalf("a 2 MiB request: %v; want invalid", err)
	}
	after, err := b.Store.LastSeq(ctx, events.StreamQueue)
	if err != nil || after != before {
		t.Fatalf("log moved from #%d to #%d on bad input (%v)", before, after, err)
	}
}
