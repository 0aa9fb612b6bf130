package mcpapi

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/trellis/trellis/vine"
)

// The URIs of the VINE specification resources.
const (
	// VineSpecBriefURI names the condensed format and agent-loop guide
	// (vine.SpecBrief).
	VineSpecBriefURI = "vine://spec/brief"
	// VineSpecFullURI names the complete format rules and agent loop
	// (vine.SpecFull).
	VineSpecFullURI = "vine://spec/full"
)

// VineSpecMIMEType is the media type of both specification texts.
const VineSpecMIMEType = "text/markdown"

// registerVineResources adds the VINE specification resources:
// vine://spec/brief (vine.SpecBrief) and vine://spec/full (vine.SpecFull),
// both text/markdown.
func registerVineResources(srv *mcp.Server) {
	for _, r := range []struct {
		uri, name, title, desc, text string
	}{
		{VineSpecBriefURI, "vine-spec-brief", "VINE format and agent loop (brief)",
			"Read first: the .vine format's essentials (magic line, metadata, blocks, headers, statuses, body lines) and how to run the agent loop with vine_next, vine_expand, vine_write and vine_claim, including the reviewing → complete hand-off and atomic claims.",
			vine.SpecBrief},
		{VineSpecFullURI, "vine-spec-full", "VINE format and agent loop (complete)",
			"Every rule of the .vine format as Trellis reads and writes it: layout, headers, body lines, constraints, canonical serialization, frontier rules, status lifecycle, mutations and their arguments, expansion, read queries, and the agent loop.",
			vine.SpecFull},
	} {
		text := r.text
		uri := r.uri
		srv.AddResource(&mcp.Resource{
			URI:         uri,
			Name:        r.name,
			Title:       r.title,
			Description: r.desc,
			MIMEType:    VineSpecMIMEType,
			Size:        int64(len(text)),
		}, func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, MIMEType: VineSpecMIMEType, Text: text}}}, nil
		})
	}
}
