package main

import (
	"context"
	"encoding/json"
	"encoding/xml"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/trellis/trellis/events/eventstest"
	"github.com/trellis/trellis/steps"
)

// writeFeature writes a feature file into a fresh directory.
func writeFeature(t *testing.T, name, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

const passingFeature = `@quick
Feature: reports
  Scenario: a report is built
    Given a Trellis server
    When I add 5 tasks to queue "jobs" with objective "Build report"
    And worker "w1" claims the next task from queue "jobs"
    And worker "w1" completes it with "Report built"
    Then queue "jobs" has 1 task "done" and 4 tasks "queued"
    And the history of that task is "added, claimed, completed"
    And no task was completed more than once
    And replaying the log rebuilds the same board
`

// TestFeaturesRunExamples runs `trellis features run features/examples`
// with the built binary, exactly as a user or CI would: the three example
// features pass (the crash one kills a real worker process with SIGKILL).
func TestFeaturesRunExamples(t *testing.T) {
	t.Parallel()
	bin := trellisBinary(t)
	cmd := exec.Command(bin, "features", "run", "features/examples")
	cmd.Dir = filepath.Join("..", "..")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("trellis features run features/examples: %v\n%s", err, out)
	}
	for _, want := range []string{
		"Feature: A nightly batch with retries",
		"Feature: Implement, then review, on a VINE graph",
		"Feature: A crashed worker's task is taken over by another worker",
		"4 scenarios (4 passed)",
	} {
		if !strings.Contains(string(out), want) {
			t.Fatalf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(string(out), ".go:") {
		t.Fatalf("the report shows Trellis's step locations:\n%s", out)
	}
}

func TestFeaturesRunPassesAndFails(t *testing.T) {
	t.Parallel()
	code, out, errs := cli(t, "features", "run", writeFeature(t, "ok.feature", passingFeature))
	if code != 0 || !strings.Contains(out, "1 scenarios (1 passed)") {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	failing := strings.Replace(passingFeature, `has 1 task "done" and 4 tasks "queued"`, `has 2 tasks "done" and 3 tasks "queued"`, 1)
	code, out, errs = cli(t, "features", "run", writeFeature(t, "bad.feature", failing))
	if code != 1 || !strings.Contains(errs, "1 of 1 scenarios failed") ||
		!strings.Contains(out, `queue "jobs" has 4 tasks "queued", 1 task "done"; expected 3 tasks "queued", 2 tasks "done"`) {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
}

// TestFeaturesRunUndefinedStep: exit 1, and stderr names the closest
// defined steps.
func TestFeaturesRunUndefinedStep(t *testing.T) {
	t.Parallel()
	f := writeFeature(t, "typo.feature", strings.Replace(passingFeature, "I add 5 tasks", "I ad 5 task", 1))
	code, out, errs := cli(t, "features", "run", f)
	if code != 1 {
		t.Fatalf("exit %d; want 1\n%s\n%s", code, out, errs)
	}
	want := "undefined step: I ad 5 task to queue \"jobs\" with objective \"Build report\"\n" +
		"  the closest defined steps are:\n" +
		"    When I add 5 tasks to queue \"jobs\" with objective \"Build report\"\n"
	if !strings.Contains(errs, want) || !strings.Contains(errs, "1 of 1 scenarios failed") {
		t.Fatalf("stderr lacks the suggestion:\n%s", errs)
	}
	if strings.Contains(out, "func ") || !strings.Contains(out, "Undefined steps are listed on stderr") {
		t.Fatalf("the report shows Go snippets:\n%s", out)
	}
}

func TestFeaturesRunFormats(t *testing.T) {
	t.Parallel()
	f := writeFeature(t, "ok.feature", passingFeature)
	dir := t.TempDir()

	jsonOut := filepath.Join(dir, "report.json")
	if code, out, errs := cli(t, "features", "run", f, "--format", "cucumber-json", "--out", jsonOut); code != 0 || out != "" {
		t.Fatalf("exit %d, stdout %q\n%s", code, out, errs)
	}
	data, err := os.ReadFile(jsonOut)
	if err != nil {
		t.Fatal(err)
	}
	var report []struct {
		Name     string `json:"name"`
		Elements []struct {
			Steps []struct {
				Result struct {
					Status string `json:"status"`
				} `json:"result"`
			} `json:"steps"`
		} `json:"elements"`
	}
	if err := json.Unmarshal(data, &report); err != nil {
		t.Fatalf("cucumber-json report: %v\n%s", err, data)
	}
	if len(report) != 1 || report[0].Name != "reports" || len(report[0].Elements[0].Steps) != 8 {
		t.Fatalf("cucumber-json report: %s", data)
	}
	for _, s := range report[0].Elements[0].Steps {
		if s.Result.Status != "passed" {
			t.Fatalf("a step is %s: %s", s.Result.Status, data)
		}
	}

	code, out, errs := cli(t, "features", "run", f, "--format", "junit")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, errs)
	}
	var suites struct {
		Tests    int `xml:"tests,attr"`
		Failures int `xml:"failures,attr"`
	}
	if err := xml.Unmarshal([]byte(out), &suites); err != nil || suites.Tests != 1 || suites.Failures != 0 {
		t.Fatalf("junit report (%v): %s", err, out)
	}
}

// TestFeaturesRunTags: --tags selects scenarios; one that selects none is
// a usage error, as is a malformed expression.
func TestFeaturesRunTags(t *testing.T) {
	t.Parallel()
	f := writeFeature(t, "ok.feature", passingFeature)
	if code, out, errs := cli(t, "features", "run", f, "--tags", "@quick && ~@slow"); code != 0 || !strings.Contains(out, "1 passed") {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	code, _, errs := cli(t, "features", "run", f, "--tags", "@nightly")
	if code != 2 || !strings.Contains(errs, `no scenario in `+f+` matches --tags "@nightly"`) {
		t.Fatalf("exit %d\n%s", code, errs)
	}
}

// TestFeaturesRunBadInput: usage errors exit 2 with a message naming
// what is wrong, before any scenario runs.
func TestFeaturesRunBadInput(t *testing.T) {
	t.Parallel()
	ok := writeFeature(t, "ok.feature", passingFeature)
	notGherkin := writeFeature(t, "main.feature", "package main\n\nfunc main() {}\n")
	empty := writeFeature(t, "empty.feature", "# nothing here\n")
	noFeatures := t.TempDir()
	if err := os.WriteFile(filepath.Join(noFeatures, "README.md"), []byte("hi"), 0o644); err != nil {
		t.Fatal(err)
	}
	badDir := t.TempDir()
	if err := os.WriteFile(filepath.Join(badDir, "broken.feature"), []byte("Feature: x\n  Scenario: y\n    Given a Trellis server\n  | a |\n  oops\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(t.TempDir(), "nope.feature")
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"no path", []string{"features", "run"}, "requires at least 1 arg"},
		{"missing path", []string{"features", "run", missing}, "path: " + missing + " does not exist"},
		{"missing path with a line", []string{"features", "run", missing + ":12"}, "path: " + missing + " does not exist"},
		{"not Gherkin", []string{"features", "run", notGherkin}, "path: " + notGherkin + " is not a Gherkin feature: Parser errors: (1:1): expected:"},
		{"no Feature", []string{"features", "run", empty}, "it holds no Feature"},
		{"directory without features", []string{"features", "run", noFeatures}, "holds no .feature files"},
		{"a broken feature in a directory", []string{"features", "run", badDir}, "broken.feature is not a Gherkin feature"},
		{"unknown format", []string{"features", "run", ok, "--format", "html"}, `format: "html" is not a format: use pretty, cucumber-json or junit`},
		{"unwritable out", []string{"features", "run", ok, "--out", filepath.Join(missing, "report.xml")}, "out: cannot write the report"},
		{"empty tag", []string{"features", "run", ok, "--tags", "@a && "}, `tags: "@a && " is not a tag expression`},
		{"words in tags", []string{"features", "run", ok, "--tags", "@a and @b"}, "is not a tag expression"},
		{"steps takes no argument", []string{"features", "steps", "queue"}, "unknown command"},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, out, errs := cli(t, c.args...)
			if code != 2 || !strings.Contains(errs, c.want) {
				t.Fatalf("exit %d; want 2 with %q\nstdout: %s\nstderr: %s", code, c.want, out, errs)
			}
			if strings.Contains(out, "Scenario") {
				t.Fatalf("a scenario ran:\n%s", out)
			}
		})
	}
}

// TestFeaturesRunNATSURL: --nats-url runs the scenarios on that server
// and leaves it as it found it; a server holding Trellis data is refused
// before any scenario runs, and its data is untouched.
func TestFeaturesRunNATSURL(t *testing.T) {
	t.Parallel()
	b := eventstest.Start(t)
	url := b.Server.ClientURL()
	f := writeFeature(t, "ok.feature", passingFeature)
	if code, out, errs := cli(t, "features", "run", f, "--nats-url", url); code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	js, err := jetstream.New(b.Conn)
	if err != nil {
		t.Fatal(err)
	}
	if names := js.StreamNames(ctx); names.Err() == nil {
		for n := range names.Name() {
			t.Errorf("stream %s left behind", n)
		}
	}
	if err := b.Store.Ensure(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := js.Publish(ctx, "trellis.queue.prod.01J00000000000000000000000.added", []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	code, out, errs := cli(t, "features", "run", f, "--nats-url", url)
	if code != 2 || !strings.Contains(errs, "holds Trellis data (stream TRELLIS_QUEUE has 1 messages)") || strings.Contains(out, "Scenario") {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	if st, err := js.Stream(ctx, "TRELLIS_QUEUE"); err != nil || st.CachedInfo().State.Msgs != 1 {
		t.Fatalf("the data was touched: %v", err)
	}
	code, _, errs = cli(t, "features", "run", f, "--nats-url", "nats://127.0.0.1:1")
	if code != 7 || !strings.Contains(errs, "cannot connect") {
		t.Fatalf("unreachable NATS: exit %d\n%s", code, errs)
	}
}

// TestFeaturesSteps: the listing shows every definition's example, from
// the same registry the runner uses.
func TestFeaturesSteps(t *testing.T) {
	t.Parallel()
	code, out, errs := cli(t, "features", "steps")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, errs)
	}
	defs := steps.Vocabulary()
	for _, d := range defs {
		first, _, _ := strings.Cut(d.Example, "\n")
		if !strings.Contains(out, first) {
			t.Errorf("the listing lacks %q", first)
		}
	}
	for _, exact := range []string{`Given a Trellis server`, `When I add 5 tasks to queue "jobs" with objective "Build report"`, `Then replaying the log rebuilds the same board`} {
		if !strings.Contains(out, exact) {
			t.Errorf("the listing lacks %q", exact)
		}
	}
	code, out, _ = cli(t, "features", "steps", "--json")
	var listed []steps.Definition
	mustJSON(t, out, &listed)
	if code != 0 || len(listed) != len(defs) || listed[0].Pattern != defs[0].Pattern || listed[0].Example == "" {
		t.Fatalf("--json listed %d definitions; want %d", len(listed), len(defs))
	}
}
