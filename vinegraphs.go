package trellis

import (
	"context"

	"github.com/trellis/trellis/vine"
)

// VineBriefNodes is the node count above which a graph view leaves out
// descriptions, decisions and attachments (ask for one node's details
// instead): a 50,000-node graph stays a few megabytes.
const VineBriefNodes = 2000

// VineGraphSummary is one graph the log holds: its id, its path relative
// to its workspace root, its title and progress.
type VineGraphSummary struct {
	GraphID  string        `json:"graph_id"`
	Path     string        `json:"path"`
	Title    string        `json:"title,omitempty"`
	Progress vine.Progress `json:"progress"`
}

// VineGraphView is a graph as the dashboard draws it: every node with its
// status and dependencies, and the frontier by id.
type VineGraphView struct {
	VineGraphSummary
	// Nodes are the graph's nodes in graph order (the root first).
	Nodes []vine.Node `json:"nodes"`
	// Brief is true when descriptions, decisions and attachments were
	// left out (more than VineBriefNodes nodes, or asked for).
	Brief bool `json:"brief"`
	// Frontier names the nodes of each frontier class.
	Frontier VineFrontierIDs `json:"frontier"`
}

// VineFrontierIDs is a frontier by node id.
type VineFrontierIDs struct {
	ReadyToStart    []string `json:"ready_to_start"`
	ReadyToComplete []string `json:"ready_to_complete"`
	Blocked         []string `json:"blocked"`
	NeedsExpansion  []string `json:"needs_expansion"`
}

// VineNodeView is one node of a graph with its dependants.
type VineNodeView struct {
	GraphID string    `json:"graph_id"`
	Node    vine.Node `json:"node"`
	// Dependants are the nodes that depend on this one.
	Dependants []string `json:"dependants"`
	// Frontier is the node's frontier class (ready_to_start,
	// ready_to_complete, blocked, needs_expansion) or "".
	Frontier string `json:"frontier"`
}

// VineGraphReader reads whole graphs as the dashboard draws them.
type VineGraphReader interface {
	// VineGraphs lists every graph the log holds.
	VineGraphs(ctx context.Context) ([]VineGraphSummary, error)
	// VineGraph returns a graph by id (brief: without descriptions,
	// decisions and attachments).
	VineGraph(ctx context.Context, graphID string, brief bool) (*VineGraphView, error)
	// VineNode returns one node of a graph in full.
	VineNode(ctx context.Context, graphID, nodeID string) (*VineNodeView, error)
}
