package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trellis/trellis"
)

// TestCLIAddFrom: `queue add --from FILE.jsonl` adds every line's task in
// bulk; a bad line (named by file and line) adds nothing; --from does not
// mix with the single-task flags.
func TestCLIAddFrom(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	d := "--data=" + filepath.Join(dir, "data")
	var b strings.Builder
	for i := 0; i < 30; i++ {
		fmt.Fprintf(&b, `{"objective": "unit %d", "inputs": ["f%d.go"], "max_steps": 4}`+"\n", i, i)
		if i == 10 {
			b.WriteString("\n") // blank lines are skipped
		}
	}
	good := filepath.Join(dir, "plan.jsonl")
	if err := os.WriteFile(good, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs := cli(t, "queue", "add", d, "--from", good, "--queue", "bulk", "--json")
	var res trellis.AddManyResult
	mustJSON(t, out, &res)
	if code != 0 || len(res.Tasks) != 30 || len(res.Errors) != 0 || res.Tasks[29].Objective != "unit 29" || res.Tasks[29].Queue != "bulk" {
		t.Fatalf("add --from: exit %d, %d tasks, %v; %s", code, len(res.Tasks), res.Errors, errs)
	}
	code, out, _ = cli(t, "queue", "list", d, "--queue", "bulk", "--json")
	var list trellis.TaskList
	mustJSON(t, out, &list)
	if code != 0 || list.Counts["bulk"][trellis.StatusQueued] != 30 {
		t.Fatalf("list: %d %+v", code, list.Counts)
	}
	bad := filepath.Join(dir, "bad.jsonl")
	if err := os.WriteFile(bad, []byte(`{"objective": "fine"}`+"\n"+`{"objective": ""}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--from", bad}, "bad.jsonl:2: objective"},
		{[]string{"--from", filepath.Join(dir, "missing.jsonl")}, "from"},
		{[]string{"--from", good, "--objective", "x"}, "objective: cannot be combined with --from"},
	} {
		code, _, errs := cli(t, append([]string{"queue", "add", d, "--queue", "badbulk"}, c.args...)...)
		if code != 2 || !strings.Contains(errs, c.want) {
			t.Fatalf("%v: exit %d, %q; want 2 naming %q", c.args, code, errs, c.want)
		}
	}
	code, out, _ = cli(t, "queue", "list", d, "--queue", "badbulk", "--json")
	mustJSON(t, out, &list)
	if code != 0 || len(list.Tasks) != 0 {
		t.Fatalf("refused files added %d tasks", len(list.Tasks))
	}
}
