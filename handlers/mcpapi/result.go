package mcpapi

import (
	"context"
	"log/slog"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/trellis/trellis"
)

// taskResult is a successful result carrying a task packet: the packet as
// structured content and, as text, lead followed by the packet's rendering.
func taskResult(lead string, t *trellis.Task) *mcp.CallToolResult {
	p := packet(t)
	var b strings.Builder
	if lead != "" {
		b.WriteString(lead)
		b.WriteString("\n\n")
	}
	renderTask(&b, p)
	return &mcp.CallToolResult{
		Content:           []mcp.Content{&mcp.TextContent{Text: b.String()}},
		StructuredContent: p,
	}
}

// listResult is a successful result carrying the board listing.
func listResult(l *trellis.TaskList) *mcp.CallToolResult {
	out := &trellis.TaskList{Tasks: l.Tasks, NextCursor: l.NextCursor, Counts: l.Counts}
	if out.Tasks == nil {
		out.Tasks = []trellis.TaskRow{}
	}
	if out.Counts == nil {
		out.Counts = map[string]map[trellis.Status]int{}
	}
	var b strings.Builder
	renderList(&b, out)
	return &mcp.CallToolResult{
		Content:           []mcp.Content{&mcp.TextContent{Text: b.String()}},
		StructuredContent: out,
	}
}

// textResult is a successful result without structured content.
func textResult(text string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}
}

// errorResult turns err into a tool error (IsError) whose text is the
// trellis.Error rendering "<code>: [<field>: ]<message>", so an agent reads
// the stable code first. An error without a code is reported as internal.
//
// An internal error is answered by trellis.PublicError's policy: the
// detail goes to the server's log (the one the server's middleware put in
// ctx) with a reference id, the agent sees the reference.
func errorResult(ctx context.Context, tool string, err error) *mcp.CallToolResult {
	res := &mcp.CallToolResult{}
	res.SetError(trellis.PublicError(loggerFrom(ctx), err, "transport", "mcp", "tool", tool))
	return res
}

// loggerKey is the context key of the server's logger.
type loggerKey struct{}

// withLogger is the receiving middleware that gives every call the
// server's logger.
func withLogger(log *slog.Logger) mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			return next(context.WithValue(ctx, loggerKey{}, log), method, req)
		}
	}
}

// loggerFrom returns the server's logger (slog.Default without one).
func loggerFrom(ctx context.Context) *slog.Logger {
	if log, ok := ctx.Value(loggerKey{}).(*slog.Logger); ok && log != nil {
		return log
	}
	return slog.Default()
}

// packet returns t as the task-packet format has it: empty lists and
// maps instead of nulls (inputs [], metadata {}, the checkpoint's lists []),
// whichever path produced t (trellis.Task.Clone, for one, turns empty lists
// into nil). t itself is not modified; the copy shares t's elements.
func packet(t *trellis.Task) *trellis.Task {
	p := *t
	p.Inputs = orEmpty(p.Inputs)
	if p.Metadata == nil {
		p.Metadata = map[string]string{}
	}
	if t.Checkpoint != nil {
		c := *t.Checkpoint
		c.WhatChanged = orEmpty(c.WhatChanged)
		c.Blockers = orEmpty(c.Blockers)
		c.Citations = orEmpty(c.Citations)
		p.Checkpoint = &c
	}
	return &p
}

func orEmpty(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
