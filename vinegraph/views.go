package vinegraph

import (
	"context"
	"slices"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/events"
	"github.com/trellis/trellis/vine"
)

// VineGraphs lists every graph the log holds, from the frontier
// projection once it has applied the whole VINE stream.
func (s *Service) VineGraphs(ctx context.Context) ([]trellis.VineGraphSummary, error) {
	if err := s.catchUp(ctx, 0); err != nil {
		return nil, err
	}
	return s.frontiers.Summaries(), nil
}

// VineGraph returns a graph by id for drawing: its nodes (without
// descriptions, decisions and attachments when brief, or when it has more
// than trellis.VineBriefNodes nodes) and its frontier by id.
func (s *Service) VineGraph(ctx context.Context, graphID string, brief bool) (*trellis.VineGraphView, error) {
	g, fr, path, err := s.graphView(ctx, graphID)
	if err != nil {
		return nil, err
	}
	v := &trellis.VineGraphView{
		VineGraphSummary: trellis.VineGraphSummary{GraphID: graphID, Path: path, Title: g.Title(), Progress: fr.Progress},
		Nodes:            g.Nodes,
		Brief:            brief || len(g.Nodes) > trellis.VineBriefNodes,
		Frontier: trellis.VineFrontierIDs{ReadyToStart: ids(fr.ReadyToStart), ReadyToComplete: ids(fr.ReadyToComplete),
			Blocked: ids(fr.Blocked), NeedsExpansion: ids(fr.NeedsExpansion)},
	}
	if v.Nodes == nil {
		v.Nodes = []vine.Node{}
	}
	if v.Brief {
		for i := range v.Nodes {
			v.Nodes[i].Description, v.Nodes[i].Decisions, v.Nodes[i].Attachments = "", nil, nil
		}
	}
	return v, nil
}

// VineNode returns one node of a graph in full, with its dependants and
// its frontier class.
func (s *Service) VineNode(ctx context.Context, graphID, nodeID string) (*trellis.VineNodeView, error) {
	if !vine.ValidID(nodeID) {
		return nil, trellis.FieldError("node", "%q is not a VINE task id", truncateID(nodeID))
	}
	g, fr, _, err := s.graphView(ctx, graphID)
	if err != nil {
		return nil, err
	}
	n, ok := g.Lookup(nodeID)
	if !ok {
		return nil, trellis.Errorf(trellis.CodeNotFound, "graph %s has no node %q", graphID, nodeID)
	}
	out := &trellis.VineNodeView{GraphID: graphID, Node: n, Dependants: []string{}}
	for _, m := range g.Nodes {
		if slices.Contains(m.Dependencies, nodeID) {
			out.Dependants = append(out.Dependants, m.ID)
		}
	}
	for class, list := range map[string][]vine.Node{"ready_to_start": fr.ReadyToStart, "ready_to_complete": fr.ReadyToComplete,
		"blocked": fr.Blocked, "needs_expansion": fr.NeedsExpansion} {
		if slices.ContainsFunc(list, func(m vine.Node) bool { return m.ID == nodeID }) {
			out.Frontier = class
		}
	}
	return out, nil
}

// graphView reads a graph and its frontier from the frontier projection
// once it has applied the whole VINE stream.
func (s *Service) graphView(ctx context.Context, graphID string) (vine.Graph, vine.Frontier, string, error) {
	if !events.IsGraphID(graphID) {
		return vine.Graph{}, vine.Frontier{}, "", trellis.FieldError("id", "%q is not a graph id (g + 20 hex)", truncateID(graphID))
	}
	if err := s.catchUp(ctx, 0); err != nil {
		return vine.Graph{}, vine.Frontier{}, "", err
	}
	path, g, fr, ok := s.frontiers.View(graphID)
	if !ok {
		return vine.Graph{}, vine.Frontier{}, "", trellis.Errorf(trellis.CodeNotFound, "no graph %s in the log", graphID)
	}
	return g, fr, path, nil
}

// ids lists the nodes' ids.
func ids(nodes []vine.Node) []string {
	out := make([]string, len(nodes))
	for i, n := range nodes {
		out[i] = n.ID
	}
	return out
}

// truncateID shortens an id quoted in an error.
func truncateID(s string) string {
	if len(s) > 64 {
		return s[:64] + "..."
	}
	return s
}
