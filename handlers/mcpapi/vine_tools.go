package mcpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/vine"
)

// The VINE tool names: the four VINE tools plus Trellis's atomic claim.
const (
	ToolVineNext   = "vine_next"
	ToolVineRead   = "vine_read"
	ToolVineWrite  = "vine_write"
	ToolVineExpand = "vine_expand"
	ToolVineClaim  = "vine_claim"
)

// vineInstructions is appended to the server instructions when the service
// runs VINE graphs: the agent loop in a few lines.
const vineInstructions = `VINE task graphs (.vine files): read the resource vine://spec/brief first (vine://spec/full has every rule).
Loop, one task per pass: vine_next → vine_expand each needs_expansion reference → vine_write set_status complete for each ready_to_complete task → vine_claim ONE ready task (it becomes started; claims are atomic across agents) → do the work → vine_write update with decisions/attachments and set_status reviewing → repeat until progress.root_status is complete.
A reviewing task is completed by a later pass once a dependant has started: do not complete your own fresh work.`

// vineFileArgs is vine_next's input.
type vineFileArgs struct {
	File string `json:"file"`
}

// vineWriteArgs is vine_write's input: one atomic batch. It decodes its
// operations itself (UnmarshalJSON), strictly and item by item, so a
// misspelt or mistyped key inside an operation object is reported with its
// position instead of being ignored.
type vineWriteArgs struct {
	File       string    `json:"file"`
	Operations []vine.Op `json:"operations"`

	opsErr error // why operations could not be decoded, reported by the call
}

// UnmarshalJSON implements json.Unmarshaler. decodeArgs has already
// checked the argument names; a file of the wrong type is a type error
// decodeArgs reports, bad operations are kept in opsErr.
func (a *vineWriteArgs) UnmarshalJSON(data []byte) error {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(data, &fields); err != nil {
		return err
	}
	if raw, ok := fields["file"]; ok {
		if err := json.Unmarshal(raw, &a.File); err != nil {
			var te *json.UnmarshalTypeError
			if errors.As(err, &te) {
				te.Field = "file"
			}
			return err
		}
	}
	if raw, ok := fields["operations"]; ok {
		a.Operations, a.opsErr = decodeOps(raw)
	}
	return nil
}

// opKeys lists the keys an operation object may have.
const opKeys = "op, id, name, status, description, dependsOn, annotations, decisions, attachments, taskId, depId, vine, uri, refName"

// decodeOps decodes the operations argument strictly: a list of objects
// whose keys are vine.Op's JSON names with values of the right types.
// null decodes as no operations (the service reports the empty batch).
func decodeOps(raw json.RawMessage) ([]vine.Op, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return nil, nil
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, trellis.FieldError("operations", "must be an array of operation objects, like [{\"op\":\"set_status\",\"id\":\"build\",\"status\":\"reviewing\"}]")
	}
	ops := make([]vine.Op, len(items))
	for i, item := range items {
		if t := bytes.TrimSpace(item); len(t) == 0 || t[0] != '{' {
			return nil, trellis.FieldError("operations", "item %d must be an object with an \"op\" key, not %s", i, oneLine(string(t), 40))
		}
		dec := json.NewDecoder(bytes.NewReader(item))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&ops[i]); err != nil {
			var te *json.UnmarshalTypeError
			if errors.As(err, &te) && te.Field != "" {
				return nil, trellis.FieldError("operations", "item %d: %s must be %s, not %s", i, te.Field, jsonTypeName(te.Type), te.Value)
			}
			if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
				return nil, trellis.FieldError("operations", "item %d: unknown key %s; an operation takes %s", i, name, opKeys)
			}
			return nil, trellis.FieldError("operations", "item %d cannot be decoded: %s", i, strings.TrimPrefix(err.Error(), "json: "))
		}
	}
	return ops, nil
}

// jsonTypeName names the JSON type a Go type decodes from.
func jsonTypeName(t reflect.Type) string {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil {
		return "a different type"
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Slice, reflect.Array:
		return "an array of " + strings.TrimPrefix(strings.TrimPrefix(jsonTypeName(t.Elem()), "an "), "a ") + "s"
	case reflect.Map, reflect.Struct:
		return "an object"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	}
	return "a " + t.Kind().String()
}

// vineExpandArgs is vine_expand's input.
type vineExpandArgs struct {
	File      string `json:"file"`
	RefID     string `json:"ref_id"`
	ChildFile string `json:"child_file"`
}

// Argument descriptions shared by the vine tools.
const (
	descVineFile  = "Path of the .vine file: absolute, or relative to the first workspace root the Trellis server was started with (--workspace; not this process's working directory). It must lie inside the workspace roots. The first use of a file takes it under Trellis's care."
	descVineID    = "Task id as written in the file's header brackets, e.g. \"build\" or \"infra/dns\"."
	descVineAgent = `Who claims: 1-128 characters of A-Z a-z 0-9 _ . : @ / + -. Optional: defaults to this client's identity, as for queue_next's worker. Recorded in the graph's event log.`
)

// descVineOps describes vine_write's operations argument, from vine.Ops.
func descVineOps() string {
	var b strings.Builder
	b.WriteString("The batch: a list of operation objects, applied in order and validated once at the end, all or nothing. Each has \"op\" and only that operation's arguments (? = optional): ")
	for i, s := range vine.Ops() {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(s.Signature())
	}
	b.WriteString(". Values: ")
	b.WriteString(strings.Join(vine.OpArgumentForms(), "; "))
	b.WriteString(`. Example: [{"op":"update","id":"build","decisions":["Used the Makefile target"]},{"op":"set_status","id":"build","status":"reviewing"}].`)
	return b.String()
}

// vineOpArgs documents the properties of one operation object.
var vineOpArgs = map[string]string{
	"op":          "The operation: " + strings.Join(vine.OpNames(), ", ") + ".",
	"id":          "The node the operation creates or changes.",
	"name":        "Short name (add_task, add_ref, update); one line.",
	"status":      "New status (add_task, set_status).",
	"description": "Description text (add_task, add_ref; update replaces it).",
	"dependsOn":   "Ids the new node depends on (add_task, add_ref).",
	"annotations": "Header annotations, key to values (add_task; update merges them, an empty list removes a key).",
	"decisions":   "Decisions or notes, one line each (update appends them; add_ref sets them).",
	"attachments": "Attachments to append (update): objects {class: artifact|guidance|file, mime: type/subtype, uri}.",
	"taskId":      "The dependant of the edge (add_dep, remove_dep).",
	"depId":       "The dependency of the edge (add_dep, remove_dep).",
	"vine":        "The referenced .vine file (add_ref, extract_to_ref), relative to this file's directory.",
	"uri":         "The new referenced .vine file (update_ref_uri).",
	"refName":     "Name of the reference extract_to_ref leaves behind (default: the task's name).",
}

// refineOps documents the item schema of the operations argument: the
// operation names, the statuses, and a description on every property.
func refineOps(s *jsonschema.Schema) {
	items := s.Items
	if items == nil {
		return
	}
	for name, p := range items.Properties {
		p.Description = vineOpArgs[name]
	}
	if p := items.Properties["op"]; p != nil {
		oneOf(vine.OpNames()...)(p)
	}
	if p := items.Properties["status"]; p != nil {
		oneOf(vine.Statuses()...)(p)
	}
}

// registerVineTools adds the five vine tools backed by svc.
func registerVineTools(srv *mcp.Server, svc trellis.VineService, who identity) {
	frontierOut := outputSchema[trellis.VineFrontier]()
	writeOut := outputSchema[trellis.VineWriteResult]()

	boundTool[vineFileArgs]{
		tool: &mcp.Tool{
			Name:  ToolVineNext,
			Title: "VINE execution frontier",
			Description: "Start every pass of the VINE agent loop here. Returns the execution frontier of a .vine task graph: needs_expansion (references to inline with vine_expand), " +
				"ready_to_complete (reviewing tasks a dependant has taken up: mark them complete with vine_write set_status), ready_to_start (claim ONE with vine_claim), " +
				"blocked, and progress (total, complete, percentage, ready_count, root_id, root_status, by_status). " +
				"Loop: next → expand refs → complete ready_to_complete → claim one ready task → work → record decisions → set reviewing → repeat until root_status is complete. " +
				"Read vine://spec/brief for the format. Read-only apart from importing a new or hand-edited file into the log.",
			OutputSchema: frontierOut,
			Annotations:  &mcp.ToolAnnotations{Title: "VINE execution frontier", ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: jsonschema.Ptr(false)},
		},
		params: []param{{name: "file", desc: descVineFile}},
		req:    []string{"file"},
		call: func(ctx context.Context, _ *mcp.CallToolRequest, in *vineFileArgs) (*mcp.CallToolResult, error) {
			fr, err := svc.VineNext(ctx, trellis.VineFileRequest{File: in.File})
			if err != nil {
				return nil, fmt.Errorf("vine_next: %w", err)
			}
			return frontierResult(fr), nil
		},
	}.register(srv)

	boundTool[trellis.VineReadRequest]{
		tool: &mcp.Tool{
			Name:  ToolVineRead,
			Title: "Query a VINE graph",
			Description: "Query a .vine task graph without changing it. action is one of: summary (root, totals, leaf count, counts by status); " +
				"list (all nodes, or filtered by status and/or query text); task (one node in full, needs id); context (a task with its dependencies' statuses, decisions and attachments and its dependants, needs id); " +
				"descendants (everything that transitively depends on id: its blast radius); search (case-insensitive over id, name, description, needs query); refs (the reference nodes); validate (check every constraint). " +
				"In the agent loop, read the context of the task you claimed before working on it.",
			Annotations: &mcp.ToolAnnotations{Title: "Query a VINE graph", ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: jsonschema.Ptr(false)},
			// No OutputSchema: the result's shape depends on the action.
		},
		params: []param{
			{name: "file", desc: descVineFile},
			{name: "action", desc: "The query: summary, list, task, context, descendants, search, refs or validate.",
				refine: oneOf(vine.ReadSummary, vine.ReadList, vine.ReadTask, vine.ReadContext, vine.ReadDescendants, vine.ReadSearch, vine.ReadRefs, vine.ReadValidate)},
			{name: "id", desc: descVineID + " Required by task, context and descendants."},
			{name: "status", desc: "list only: keep nodes in this status (complete, started, reviewing, planning, notstarted, blocked, or ref for references)."},
			{name: "query", desc: "list: keep nodes whose id, name or description contains this text (case-insensitive); search: the text to find (required)."},
		},
		req: []string{"file", "action"},
		call: func(ctx context.Context, _ *mcp.CallToolRequest, in *trellis.VineReadRequest) (*mcp.CallToolResult, error) {
			res, err := svc.VineRead(ctx, *in)
			if err != nil {
				return nil, fmt.Errorf("vine_read: %w", err)
			}
			return readResult(res), nil
		},
	}.register(srv)

	boundTool[vineWriteArgs]{
		tool: &mcp.Tool{
			Name:  ToolVineWrite,
			Title: "Change a VINE graph",
			Description: "Apply one atomic batch of operations to a .vine task graph: all succeed or nothing changes (the graph must satisfy every constraint afterwards: no cycles, no islands, known dependencies). " +
				"In the agent loop: mark ready_to_complete tasks complete ({op: set_status, status: complete}); after working on your claimed task, record decisions and attachments ({op: update}) and hand it over ({op: set_status, status: reviewing}), " +
				"or set blocked with a decision saying why. Also plans: add_task, add_dep, add_ref, extract_to_ref and more (see operations). " +
				"Returns the summary, per-operation results, progress and the new frontier; the file is rewritten in canonical form.",
			OutputSchema: writeOut,
			Annotations:  &mcp.ToolAnnotations{Title: "Change a VINE graph", DestructiveHint: jsonschema.Ptr(true), OpenWorldHint: jsonschema.Ptr(false)},
		},
		params: []param{
			{name: "file", desc: descVineFile},
			{name: "operations", desc: descVineOps(), refine: refineOps},
		},
		req: []string{"file", "operations"},
		call: func(ctx context.Context, req *mcp.CallToolRequest, in *vineWriteArgs) (*mcp.CallToolResult, error) {
			if in.opsErr != nil {
				return nil, in.opsErr
			}
			res, err := svc.VineWrite(ctx, trellis.VineWriteRequest{File: in.File, Operations: in.Operations, Agent: who.worker(req, "")})
			if err != nil {
				return nil, fmt.Errorf("vine_write: %w", err)
			}
			return writeResult(res.Summary, res), nil
		},
	}.register(srv)

	boundTool[vineExpandArgs]{
		tool: &mcp.Tool{
			Name:  ToolVineExpand,
			Title: "Expand a VINE reference",
			Description: "Inline a child .vine graph at a reference node listed in vine_next's needs_expansion, so its tasks become part of this graph and can be scheduled. " +
				"The child root takes the reference's id; the other child ids become prefix/id (prefix: the child's prefix metadata, else ref_id); dependencies are remapped. " +
				"Do this during the loop's housekeeping, then call vine_next again. Returns the summary, progress and the new frontier.",
			OutputSchema: writeOut,
			Annotations:  &mcp.ToolAnnotations{Title: "Expand a VINE reference", DestructiveHint: jsonschema.Ptr(false), OpenWorldHint: jsonschema.Ptr(false)},
		},
		params: []param{
			{name: "file", desc: descVineFile},
			{name: "ref_id", desc: "Id of the reference node to expand (from needs_expansion)."},
			{name: "child_file", desc: "The child .vine file: normally the reference's own path (its \"vine\" field). Relative paths resolve against the parent file's directory and must stay inside the workspace roots."},
		},
		req: []string{"file", "ref_id", "child_file"},
		call: func(ctx context.Context, req *mcp.CallToolRequest, in *vineExpandArgs) (*mcp.CallToolResult, error) {
			res, err := svc.VineExpand(ctx, trellis.VineExpandRequest{File: in.File, RefID: in.RefID, ChildFile: in.ChildFile, Agent: who.worker(req, "")})
			if err != nil {
				return nil, fmt.Errorf("vine_expand: %w", err)
			}
			return writeResult(res.Summary+".", res), nil
		},
	}.register(srv)

	boundTool[trellis.VineClaimRequest]{
		tool: &mcp.Tool{
			Name:  ToolVineClaim,
			Title: "Claim one ready VINE task",
			Description: "Atomically claim ONE task that is ready to start and set it started: the given id, or else the first task in vine_next's ready_to_start. " +
				"Claims are atomic across agents and Trellis processes: no task is ever claimed twice; naming a task another agent took first is a conflict, and without id the next ready task is taken. " +
				"Returns the task with its dependencies' statuses, decisions and attachments (your inputs), or task null when nothing is ready (stop and report progress). " +
				"Then do the work, record decisions with vine_write update, and set the task reviewing.",
			OutputSchema: outputSchema[trellis.VineClaimResult](),
			Annotations:  &mcp.ToolAnnotations{Title: "Claim one ready VINE task", DestructiveHint: jsonschema.Ptr(false), OpenWorldHint: jsonschema.Ptr(false)},
		},
		params: []param{
			{name: "file", desc: descVineFile},
			{name: "id", desc: descVineID + " Optional: without it the first ready task is claimed."},
			{name: "agent", desc: descVineAgent},
		},
		req: []string{"file"},
		call: func(ctx context.Context, req *mcp.CallToolRequest, in *trellis.VineClaimRequest) (*mcp.CallToolResult, error) {
			in.Agent = who.worker(req, in.Agent)
			res, err := svc.VineClaim(ctx, *in)
			if err != nil {
				return nil, fmt.Errorf("vine_claim: %w", err)
			}
			return claimResult(in.Agent, res), nil
		},
	}.register(srv)
}
