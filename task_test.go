package trellis_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/trellis/trellis"
)

func TestCloneKeepsEmptyListsEmpty(t *testing.T) {
	t.Parallel()
	orig := &trellis.Task{TaskID: "x", Inputs: []string{}, Metadata: map[string]string{},
		Checkpoint: &trellis.Checkpoint{WhatChanged: []string{}, Blockers: []string{}, Citations: []string{}}}
	data, err := json.Marshal(orig.Clone())
	if err != nil {
		t.Fatal(err)
	}
	if strings.Count(string(data), "null") != 1 || !strings.Contains(string(data), `"parent_id":null`) {
		t.Fatalf("clone turned empty lists into null: %s", data)
	}
}

func TestCloneIsDeep(t *testing.T) {
	t.Parallel()
	p := "parent"
	orig := &trellis.Task{TaskID: "x", ParentID: &p, Inputs: []string{"a"}, Metadata: map[string]string{"k": "v"},
		Checkpoint: &trellis.Checkpoint{Blockers: []string{"b"}}}
	c := orig.Clone()
	c.Inputs[0], c.Metadata["k"], *c.ParentID, c.Checkpoint.Blockers[0] = "z", "z", "z", "z"
	if orig.Inputs[0] != "a" || orig.Metadata["k"] != "v" || *orig.ParentID != "parent" || orig.Checkpoint.Blockers[0] != "b" {
		t.Fatalf("clone shares memory with the original: %+v", orig)
	}
}
