package trellis

import (
	"context"

	"github.com/trellis/trellis/vine"
)

// VineService runs VINE task graphs as event-sourced aggregates: every
// mutation batch, claim, expansion and detected hand edit is an event, and
// the .vine file is rewritten from the log after each change. Tools and
// argument names follow the VINE tool set (vine_next, vine_read, vine_write,
// vine_expand). The in-process service and the NATS client implement it.
type VineService interface {
	// VineNext returns the execution frontier of the graph in file.
	VineNext(ctx context.Context, req VineFileRequest) (*VineFrontier, error)
	// VineRead answers a read query (summary, list, task, context,
	// descendants, search, refs, validate).
	VineRead(ctx context.Context, req VineReadRequest) (*VineReadResult, error)
	// VineWrite applies one atomic batch of operations.
	VineWrite(ctx context.Context, req VineWriteRequest) (*VineWriteResult, error)
	// VineClaim atomically claims one ready task (the given one, or the
	// first ready); Task is nil when none is ready.
	VineClaim(ctx context.Context, req VineClaimRequest) (*VineClaimResult, error)
	// VineExpand inlines a child graph at a reference node.
	VineExpand(ctx context.Context, req VineExpandRequest) (*VineWriteResult, error)
	// VineImport takes a .vine file under Trellis's care (or reconciles it).
	VineImport(ctx context.Context, req VineFileRequest) (*VineGraphInfo, error)
	// VineExport returns a graph's canonical text from the log.
	VineExport(ctx context.Context, req VineExportRequest) (*VineExportResult, error)
}

// VineFileRequest names a .vine file.
type VineFileRequest struct {
	File  string `json:"file"`
	Agent string `json:"agent,omitempty"`
}

// VineReadRequest is vine_read's input.
type VineReadRequest struct {
	File   string `json:"file"`
	Action string `json:"action"`
	ID     string `json:"id,omitempty"`
	Status string `json:"status,omitempty"`
	Query  string `json:"query,omitempty"`
}

// VineWriteRequest is vine_write's input: one atomic batch.
type VineWriteRequest struct {
	File       string    `json:"file"`
	Operations []vine.Op `json:"operations"`
	Agent      string    `json:"agent,omitempty"`
}

// VineClaimRequest claims one ready task for an agent.
type VineClaimRequest struct {
	File  string `json:"file"`
	ID    string `json:"id,omitempty"`
	Agent string `json:"agent"`
}

// VineExpandRequest is vine_expand's input.
type VineExpandRequest struct {
	File      string `json:"file"`
	RefID     string `json:"ref_id"`
	ChildFile string `json:"child_file"`
	Agent     string `json:"agent,omitempty"`
}

// VineExportRequest names a graph by id or by file.
type VineExportRequest struct {
	Graph string `json:"graph"`
}

// VineFrontier is the execution frontier of a graph with the graph's id
// (the frontier's fields are inlined in JSON, after graph_id).
type VineFrontier struct {
	GraphID string `json:"graph_id"`
	vine.Frontier
}

// VineReadResult wraps a read query's answer.
type VineReadResult struct {
	GraphID string `json:"graph_id"`
	Action  string `json:"action"`
	Result  any    `json:"result"`
}

// VineWriteResult reports an applied batch: the operation summary, the
// progress and the new frontier.
type VineWriteResult struct {
	GraphID  string          `json:"graph_id"`
	Summary  string          `json:"summary"`
	Results  []vine.OpResult `json:"results"`
	Progress vine.Progress   `json:"progress"`
	Frontier vine.Frontier   `json:"frontier"`
	// Written lists the files rewritten (the graph, extracted children).
	Written []string `json:"written"`
}

// VineClaimResult is a claimed VINE node with its context, or Node nil
// when none was ready (the node is "task" on the wire).
type VineClaimResult struct {
	GraphID  string            `json:"graph_id"`
	Node     *vine.NodeContext `json:"task"`
	Progress vine.Progress     `json:"progress"`
}

// VineGraphInfo describes a graph under Trellis's care.
type VineGraphInfo struct {
	GraphID  string        `json:"graph_id"`
	File     string        `json:"file"`
	Path     string        `json:"path"`
	Imported bool          `json:"imported"`
	HandEdit bool          `json:"hand_edit_recorded"`
	Progress vine.Progress `json:"progress"`
}

// VineExportResult is a graph's canonical text.
type VineExportResult struct {
	GraphID string `json:"graph_id"`
	Path    string `json:"path"`
	Text    string `json:"text"`
}
