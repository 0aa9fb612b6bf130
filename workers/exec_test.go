package workers_test

import (
	"context"
	"strings"
	"testing"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/workers"
)

func execTask() *trellis.Task {
	return &trellis.Task{TaskID: "01JBTESTTASK0000000000000X", Queue: "q", Objective: "say hi", Attempts: 2, Inputs: []string{"a.py"}}
}

func TestExecPassesPacketAndEnvironment(t *testing.T) {
	t.Parallel()
	e := &workers.Exec{Command: `read -r line; echo "$line" | grep -q '"objective":"say hi"' || exit 9; echo "id=$TRELLIS_TASK_ID q=$TRELLIS_QUEUE attempt=$TRELLIS_ATTEMPT"`}
	cp, err := e.Handle(context.Background(), execTask(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if cp.WhatWasDone != "id=01JBTESTTASK0000000000000X q=q attempt=2" {
		t.Fatalf("what_was_done = %q", cp.WhatWasDone)
	}
}

func TestExecJSONReport(t *testing.T) {
	t.Parallel()
	e := &workers.Exec{Command: `echo working; echo '{"what_was_done":"fixed it","what_changed":["a.go"],"what_next":"ship","citations":["chunk_1"],"steps_used":3,"tool_calls_used":7}'`}
	cp, err := e.Handle(context.Background(), execTask(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if cp.WhatWasDone != "fixed it" || cp.WhatChanged[0] != "a.go" || cp.WhatNext != "ship" || cp.Citations[0] != "chunk_1" ||
		cp.Usage.StepsUsed != 3 || cp.Usage.ToolCallsUsed != 7 {
		t.Fatalf("checkpoint = %+v", cp)
	}
}

func TestExecFailureUsesStderrTail(t *testing.T) {
	t.Parallel()
	e := &workers.Exec{Command: `echo out; for i in $(seq 1 2000); do echo "noise $i" >&2; done; echo "the real reason" >&2; exit 4`}
	_, err := e.Handle(context.Background(), execTask(), nil)
	if err == nil || !strings.Contains(err.Error(), "the real reason") || !strings.Contains(err.Error(), "exit status 4") || len(err.Error()) > 4200 {
		t.Fatalf("error = %.200q (len %d)", err, len(err.Error()))
	}
}

func TestExecEmptyOutput(t *testing.T) {
	t.Parallel()
	cp, err := (&workers.Exec{Command: `true`}).Handle(context.Background(), execTask(), nil)
	if err != nil || cp.WhatWasDone != "command exited 0" {
		t.Fatalf("%+v, %v", cp, err)
	}
	// A last line that looks like JSON but is not falls back to the tail.
	cp, err = (&workers.Exec{Command: `echo '{not json'`}).Handle(context.Background(), execTask(), nil)
	if err != nil || cp.WhatWasDone != "{not json" {
		t.Fatalf("%+v, %v", cp, err)
	}
}
