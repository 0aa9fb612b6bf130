package vine

import (
	"fmt"
	"strings"
)

// OpSpec documents one operation of a batch: the one description that
// Apply's argument check, the CLI help, the README and the MCP tool
// descriptions are made from.
type OpSpec struct {
	// Name is the value of Op.Op.
	Name string
	// Args are the JSON names of the arguments the operation takes, in
	// order; a trailing "?" marks an optional one.
	Args []string
	// Effect says what the operation does, in one line.
	Effect string
}

// Signature is the operation with its arguments, as VINE.md writes it:
// "set_status {id, status}", "update {id, name?, ...}", "create {}".
func (s OpSpec) Signature() string {
	return s.Name + " {" + strings.Join(s.Args, ", ") + "}"
}

// fields returns the argument names without the optional marks.
func (s OpSpec) fields() []string {
	out := make([]string, len(s.Args))
	for i, a := range s.Args {
		out[i] = strings.TrimSuffix(a, "?")
	}
	return out
}

// opSpecs is the list Ops returns, in VINE.md's order.
var opSpecs = []OpSpec{
	{OpCreate, nil, "start a new empty graph; must be the first operation, and a later add_task supplies the root"},
	{OpAddTask, []string{"id", "name", "status?", "description?", "dependsOn?", "annotations?"},
		"append a task at the end of graph order (status defaults to notstarted)"},
	{OpRemoveTask, []string{"id"}, "remove a node (never the root) and every edge pointing to it"},
	{OpSetStatus, []string{"id", "status"}, "set a task's status (not on references)"},
	{OpClaim, []string{"id"}, "set a task that is ready to start to started and return it with its resolved dependencies; a task that is not ready is a conflict"},
	{OpUpdate, []string{"id", "name?", "description?", "decisions?", "attachments?", "annotations?"},
		"rename, replace the description, append decisions and attachments, merge annotations (an empty list removes a key)"},
	{OpAddDep, []string{"taskId", "depId"}, "add the edge taskId -> depId (taskId depends on depId)"},
	{OpRemoveDep, []string{"taskId", "depId"}, "remove the edge taskId -> depId"},
	{OpAddRef, []string{"id", "name", "vine", "description?", "dependsOn?", "decisions?"},
		"append a reference to the .vine file vine (relative to this file's directory)"},
	{OpUpdateRefURI, []string{"id", "uri"}, "point a reference at another .vine file"},
	{OpExtractToRef, []string{"id", "vine", "refName?"},
		"move a task into a new child file vine and leave a reference (named refName, default the task's name) in its place"},
}

// Ops lists every operation Apply accepts, in VINE.md's order. The caller
// may modify the result.
func Ops() []OpSpec {
	out := make([]OpSpec, len(opSpecs))
	for i, s := range opSpecs {
		s.Args = append([]string(nil), s.Args...)
		out[i] = s
	}
	return out
}

// OpNames lists the operation names, in Ops's order.
func OpNames() []string {
	out := make([]string, len(opSpecs))
	for i, s := range opSpecs {
		out[i] = s.Name
	}
	return out
}

// lookupOp returns the spec of an operation name.
func lookupOp(name string) (OpSpec, bool) {
	for _, s := range opSpecs {
		if s.Name == name {
			return s, true
		}
	}
	return OpSpec{}, false
}

// OpArgumentForms says how the arguments that are not plain strings are
// written in JSON, one line each.
func OpArgumentForms() []string {
	return []string{
		fmt.Sprintf("status: one of %s", strings.Join(statusNames(), ", ")),
		"description: text; update replaces the description with it",
		`dependsOn: ["id", ...]`,
		`decisions: ["text", ...] (one line each; a leading "> " is dropped); update appends them`,
		`attachments: [{"class": "artifact"|"guidance"|"file", "mime": "type/subtype", "uri": "..."}]; update appends them`,
		`annotations: {"key": ["value", ...]}; update merges them key by key`,
	}
}

func statusNames() []string {
	st := Statuses()
	out := make([]string, len(st))
	for i, s := range st {
		out[i] = string(s)
	}
	return out
}
