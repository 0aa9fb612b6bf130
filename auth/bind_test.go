package auth_test

import (
	"context"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"reflect"
	"strings"
	"testing"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/auth"
)

// actorTags are the JSON names of the fields by which a request names who
// acts (or an agent, a worker it concerns).
var actorTags = []string{"worker", "agent", "agent_id", "actor", "by"}

// boundRequests are the request types auth.Bind makes act as the caller:
// each one refuses a foreign actor.
var boundRequests = map[string]any{
	"NextRequest":           &trellis.NextRequest{},
	"DoneRequest":           &trellis.DoneRequest{},
	"FailRequest":           &trellis.FailRequest{},
	"RetryRequest":          &trellis.RetryRequest{},
	"ControlRequest":        &trellis.ControlRequest{},
	"CancelRequest":         &trellis.CancelRequest{},
	"HeartbeatRequest":      &trellis.HeartbeatRequest{},
	"ReleaseRequest":        &trellis.ReleaseRequest{},
	"ScheduleRequest":       &trellis.ScheduleRequest{},
	"RemoveScheduleRequest": &trellis.RemoveScheduleRequest{},
	"VineFileRequest":       &trellis.VineFileRequest{},
	"VineWriteRequest":      &trellis.VineWriteRequest{},
	"VineClaimRequest":      &trellis.VineClaimRequest{},
	"VineExpandRequest":     &trellis.VineExpandRequest{},
	"ObserveRequest":        &trellis.ObserveRequest{},
}

// notActors are the request types whose agent or actor field names whom
// the request is about, not who acts, with the reason.
var notActors = map[string]string{
	"LiveRequest":               "actor filters the events shown",
	"AuditQueryRequest":         "actor filters the events shown",
	"AgentTaskJoinRequest":      "agent_id is the agent an admin joins to a task",
	"AgentTaskObjectiveRequest": "agent_id is the agent an admin gives an objective",
	"AgentCompleteRequest":      "agent_id is the agent an admin completes",
	"ConsolidateRequest":        "agent_id is the agent whose observations an admin consolidates",
}

// TestBindCoversEveryActorRequest: every request type of the API that has
// a field naming a worker, agent or actor is either made to act as the
// caller by auth.Bind (a foreign name refused, an empty one filled) or
// listed above as naming whom it is about. A new request type naming an
// actor fails here until it is one or the other.
func TestBindCoversEveryActorRequest(t *testing.T) {
	t.Parallel()
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, "..", func(fi fs.FileInfo) bool {
		return !strings.HasSuffix(fi.Name(), "_test.go")
	}, 0)
	if err != nil {
		t.Fatal(err)
	}
	found := 0
	for _, pkg := range pkgs {
		for _, f := range pkg.Files {
			ast.Inspect(f, func(n ast.Node) bool {
				ts, ok := n.(*ast.TypeSpec)
				if !ok || !strings.HasSuffix(ts.Name.Name, "Request") {
					return true
				}
				st, ok := ts.Type.(*ast.StructType)
				if !ok {
					return true
				}
				for _, fld := range st.Fields.List {
					if fld.Tag == nil {
						continue
					}
					tag := reflect.StructTag(strings.Trim(fld.Tag.Value, "`")).Get("json")
					name, _, _ := strings.Cut(tag, ",")
					for _, a := range actorTags {
						if name != a {
							continue
						}
						found++
						_, bound := boundRequests[ts.Name.Name]
						_, other := notActors[ts.Name.Name]
						if !bound && !other {
							t.Errorf("trellis.%s names %q but auth.Bind does not check it: bind it (and add it to boundRequests) or list it in notActors with the reason", ts.Name.Name, name)
						}
					}
				}
				return true
			})
		}
	}
	if found < len(boundRequests) {
		t.Fatalf("found only %d actor fields: the parse missed the request types", found)
	}
	alice := auth.WithIdentity(context.Background(), auth.Identity{Name: "alice", Role: auth.RoleAdmin})
	for name, proto := range boundRequests {
		field := actorField(t, proto)
		foreign := reflect.New(reflect.TypeOf(proto).Elem())
		foreign.Elem().FieldByIndex(field.Index).SetString("mallory")
		if err := auth.Bind(alice, foreign.Interface()); trellis.ErrorCode(err) != trellis.CodeUnauthorized {
			t.Errorf("%s naming mallory as %s, sent by alice: %v; want unauthorized", name, field.Name, err)
		}
		slot := reflect.New(reflect.TypeOf(proto).Elem())
		slot.Elem().FieldByIndex(field.Index).SetString("alice/2")
		if err := auth.Bind(alice, slot.Interface()); err != nil {
			t.Errorf("%s naming alice's slot: %v", name, err)
		}
		empty := reflect.New(reflect.TypeOf(proto).Elem())
		if err := auth.Bind(alice, empty.Interface()); err != nil {
			t.Errorf("%s naming nobody: %v", name, err)
		} else if got := empty.Elem().FieldByIndex(field.Index).String(); got != "alice" && name != "ObserveRequest" {
			t.Errorf("%s naming nobody acts as %q; want alice", name, got)
		}
	}
}

// actorField is the field of a request type that names who acts.
func actorField(t *testing.T, proto any) reflect.StructField {
	t.Helper()
	typ := reflect.TypeOf(proto).Elem()
	for _, f := range reflect.VisibleFields(typ) {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		for _, a := range actorTags {
			if name == a && f.Type.Kind() == reflect.String {
				return f
			}
		}
	}
	t.Fatalf("%s has no actor field", typ)
	return reflect.StructField{}
}
