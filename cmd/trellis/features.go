package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"

	gherkin "github.com/cucumber/gherkin/go/v26"
	"github.com/cucumber/godog"
	messages "github.com/cucumber/messages/go/v21"
	"github.com/spf13/cobra"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/steps"
)

// godogFormat maps a --format name onto godog's formatter.
func godogFormat(name string) (string, bool) {
	switch name {
	case "pretty", "junit":
		return name, true
	case "cucumber-json":
		return "cucumber", true
	}
	return "", false
}

func (a *app) featuresCommand() *cobra.Command {
	c := &cobra.Command{
		Use:   "features",
		Short: "Describe your workflows as Gherkin features and run them against a fresh Trellis per scenario",
		Long: `Features are Gherkin files whose steps come from Trellis's vocabulary (trellis features steps lists it):
queues and tasks, worker pools and processes, VINE graphs run by agents, agent memory, waiting, and
assertions over the event log. Each scenario runs against a fresh embedded Trellis that is removed when
it ends.`,
	}
	c.AddCommand(a.featuresRun(), a.featuresSteps())
	return c
}

func (a *app) featuresRun() *cobra.Command {
	var tags, format, out string
	c := &cobra.Command{
		Use:   "run PATH... [--tags EXPR] [--format pretty|cucumber-json|junit] [--out FILE]",
		Short: "Run feature files (or directories of them) against a fresh Trellis per scenario: exit 0 when all pass, 1 otherwise",
		Long: `Runs the scenarios of the .feature files given (a directory stands for every .feature file under it;
FILE:LINE runs one scenario) in strict mode: a step no definition matches fails its scenario, and is
reported on stderr with the closest defined steps. Each scenario starts a fresh embedded Trellis in a
scratch directory, removed when the scenario ends. Commands in steps run in the feature file's directory.

With --nats-url (the flag, not TRELLIS_NATS_URL), scenarios run on that NATS server instead; it must hold
no Trellis data, since each scenario deletes Trellis's streams when it ends: the run refuses to start
when one of them holds messages or a Trellis server answers on it.

Exit codes: 0 every scenario passed · 1 a scenario failed (undefined steps included) · 2 usage errors
(a missing path, a file that is not Gherkin, an unknown --format, bad --tags, an unwritable --out,
no scenario to run) · 7 the --nats-url server cannot be reached.`,
		Example: `  trellis features run features/examples
  trellis features run features/nightly.feature --tags '@nightly && ~@slow'
  trellis features run features --format junit --out report.xml`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, paths []string) error {
			gf, ok := godogFormat(format)
			if !ok {
				return trellis.FieldError("format", "%q is not a format: use pretty, cucumber-json or junit", format)
			}
			if err := checkTags(tags); err != nil {
				return err
			}
			if err := checkFeaturePaths(paths); err != nil {
				return err
			}
			natsURL := ""
			if f := cmd.Flag("nats-url"); f != nil && f.Changed {
				natsURL = a.natsURL
				if err := steps.CheckScratch(cmd.Context(), natsURL); err != nil {
					if strings.Contains(err.Error(), "cannot connect") {
						return &trellis.Error{Code: trellis.CodeUnavailable, Message: err.Error(), Err: err}
					}
					return trellis.FieldError("nats-url", "%v", err)
				}
			}
			var output io.Writer = a.stdout
			if out != "" {
				f, err := os.Create(out)
				if err != nil {
					return trellis.FieldError("out", "cannot write the report: %v", err)
				}
				defer f.Close()
				output = f
			}
			bin, err := os.Executable()
			if err != nil {
				return fmt.Errorf("find the trellis binary for worker processes: %w", err)
			}
			return a.runFeatures(cmd, paths, tags, gf, output, steps.Config{NATSURL: natsURL, Binary: bin})
		},
	}
	f := c.Flags()
	f.StringVar(&tags, "tags", "", "run only the scenarios whose tags match: @a, ~@a (not), @a,@b (or), @a && @b (and)")
	f.StringVar(&format, "format", "pretty", "report format: pretty, cucumber-json or junit")
	f.StringVar(&out, "out", "", "write the report to this file instead of stdout")
	return c
}

// failedRun reports scenarios that ran and failed: exit code 1.
type failedRun struct{ failed, total int }

func (e *failedRun) Error() string {
	return fmt.Sprintf("%d of %d scenarios failed", e.failed, e.total)
}

// ExitCode is the process exit code of a failed run.
func (e *failedRun) ExitCode() int { return 1 }

// undefinedStep is a step no definition matched, with the closest ones.
type undefinedStep struct {
	text    string
	closest []steps.Definition
}

func (a *app) runFeatures(cmd *cobra.Command, paths []string, tags, format string, output io.Writer, cfg steps.Config) error {
	var mu sync.Mutex
	var undefined []undefinedStep
	total, failed := 0, 0
	cfg.OnUndefined = func(text string, closest []steps.Definition) {
		mu.Lock()
		defer mu.Unlock()
		for _, u := range undefined {
			if u.text == text {
				return
			}
		}
		undefined = append(undefined, undefinedStep{text, closest})
	}
	var out io.Writer = output
	if format == "pretty" {
		lf := &reportFilter{w: output}
		defer lf.flush()
		out = lf
	}
	suite := godog.TestSuite{
		Name: "trellis features",
		ScenarioInitializer: func(sc *godog.ScenarioContext) {
			steps.Register(sc, cfg)
			sc.After(func(ctx context.Context, _ *godog.Scenario, err error) (context.Context, error) {
				mu.Lock()
				defer mu.Unlock()
				total++
				if err != nil {
					failed++
				}
				return ctx, nil
			})
		},
		Options: &godog.Options{
			Format:         format,
			Paths:          paths,
			Tags:           tags,
			Output:         out,
			NoColors:       !isTerminal(output),
			Strict:         true,
			Concurrency:    1,
			DefaultContext: cmd.Context(),
		},
	}
	status := suite.Run()
	for _, u := range undefined {
		fmt.Fprintf(a.stderr, "undefined step: %s\n  the closest defined steps are:\n", u.text)
		for _, d := range u.closest {
			first, _, _ := strings.Cut(d.Example, "\n")
			fmt.Fprintf(a.stderr, "    %s\n", first)
		}
	}
	switch {
	case status == 2:
		return &usageError{errors.New("godog refused the options (see above)")}
	case total == 0 && tags != "":
		return &usageError{fmt.Errorf("no scenario in %s matches --tags %q", strings.Join(paths, " "), tags)}
	case total == 0:
		return &usageError{fmt.Errorf("no scenario to run in %s", strings.Join(paths, " "))}
	case status != 0 || failed > 0:
		return &failedRun{failed: max(failed, 1), total: total}
	}
	return nil
}

// stepLocationRE matches the "# file.go:LINE -> func" comment the pretty
// format ends each step line with (colour codes included).
var stepLocationRE = regexp.MustCompile(`[ \t]+(?:\x1b\[[0-9;]*m)*# [^ ]+\.go:\d+ -> [^ \x1b]*(?:\x1b\[[0-9;]*m)*$`)

// snippetsHeader starts godog's Go snippets for undefined steps, the end
// of its pretty report.
const snippetsHeader = "You can implement step definitions for undefined steps with these snippets:"

// reportFilter adapts godog's pretty report to features written with the
// Trellis vocabulary, line by line: it removes the step locations (they
// point into Trellis's sources) and replaces the Go snippets for
// undefined steps (the closest defined steps go to stderr instead).
type reportFilter struct {
	w        io.Writer
	partial  []byte
	snippets bool
}

func (f *reportFilter) Write(p []byte) (int, error) {
	f.partial = append(f.partial, p...)
	for {
		i := bytes.IndexByte(f.partial, '\n')
		if i < 0 {
			return len(p), nil
		}
		line := f.filter(f.partial[:i])
		f.partial = f.partial[i+1:]
		if line == nil {
			continue
		}
		if _, err := f.w.Write(append(line, '\n')); err != nil {
			return len(p), err
		}
	}
}

// filter returns the line to write, or nil to drop it.
func (f *reportFilter) filter(line []byte) []byte {
	if f.snippets {
		return nil
	}
	if bytes.Contains(line, []byte(snippetsHeader)) {
		f.snippets = true
		return []byte("Undefined steps are listed on stderr with the closest defined ones; `trellis features steps` prints them all.")
	}
	return stepLocationRE.ReplaceAll(line, nil)
}

// flush writes what is left of an unfinished line.
func (f *reportFilter) flush() {
	if len(f.partial) > 0 {
		if line := f.filter(f.partial); line != nil {
			_, _ = f.w.Write(line)
		}
		f.partial = nil
	}
}

// isTerminal reports whether w is a terminal (colours are for people).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

var (
	tagTermRE  = regexp.MustCompile(`^~?@?[^\s@~,&]+$`)
	pathLineRE = regexp.MustCompile(`:\d+$`)
)

// checkTags validates a godog tag expression (godog itself panics on an
// empty term and silently matches nothing on "and"/"or" words).
func checkTags(expr string) error {
	if expr == "" {
		return nil
	}
	for _, and := range strings.Split(expr, "&&") {
		for _, term := range strings.Split(and, ",") {
			if !tagTermRE.MatchString(strings.TrimSpace(term)) {
				return trellis.FieldError("tags", "%q is not a tag expression: write @tag, ~@tag (not), @a,@b (or), @a && @b (and)", expr)
			}
		}
	}
	return nil
}

// checkFeaturePaths checks that every path exists and that every feature
// file it names is Gherkin, so that mistakes are usage errors with a clear
// message rather than godog's.
func checkFeaturePaths(paths []string) error {
	for _, p := range paths {
		path := pathLineRE.ReplaceAllString(p, "")
		info, err := os.Stat(path)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return trellis.FieldError("path", "%s does not exist", path)
			}
			return trellis.FieldError("path", "%v", err)
		}
		if !info.IsDir() {
			if err := checkGherkin(path); err != nil {
				return err
			}
			continue
		}
		n := 0
		err = filepath.WalkDir(path, func(f string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() || !strings.HasSuffix(f, ".feature") {
				return nil
			}
			n++
			return checkGherkin(f)
		})
		if err != nil {
			var te *trellis.Error
			if errors.As(err, &te) {
				return te
			}
			return trellis.FieldError("path", "%v", err)
		}
		if n == 0 {
			return trellis.FieldError("path", "%s holds no .feature files", path)
		}
	}
	return nil
}

// checkGherkin parses one feature file.
func checkGherkin(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return trellis.FieldError("path", "%v", err)
	}
	defer f.Close()
	doc, err := gherkin.ParseGherkinDocument(f, (&messages.Incrementing{}).NewId)
	if err != nil {
		return trellis.FieldError("path", "%s is not a Gherkin feature: %s", path, strings.ReplaceAll(strings.TrimSpace(err.Error()), "\n", " "))
	}
	if doc.Feature == nil {
		return trellis.FieldError("path", "%s is not a Gherkin feature: it holds no Feature", path)
	}
	return nil
}

func (a *app) featuresSteps() *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:     "steps",
		Short:   "Print the step vocabulary of features, with an example for each step",
		Example: "  trellis features steps\n  trellis features steps --json | jq -r '.[].pattern'",
		Args:    cobra.NoArgs,
		RunE: func(_ *cobra.Command, _ []string) error {
			defs := steps.Vocabulary()
			if asJSON {
				return printJSON(a.stdout, defs)
			}
			printVocabulary(a.stdout, defs)
			return nil
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print the definitions as JSON (group, pattern, example, doc, check)")
	return c
}

// printVocabulary writes the steps for people, group by group.
func printVocabulary(w io.Writer, defs []steps.Definition) {
	fmt.Fprintln(w, "Steps of trellis features. Quoted values and numbers are yours to choose; a line ending in \":\"")
	fmt.Fprintln(w, "takes the doc string or table shown under it. Checks (marked ✓) can be waited on with")
	fmt.Fprintln(w, "\"wait up to N seconds until <check>\".")
	group := ""
	for _, d := range defs {
		if d.Group != group {
			group = d.Group
			fmt.Fprintf(w, "\n%s\n", group)
		}
		mark := " "
		if d.Check {
			mark = "✓"
		}
		lines := strings.Split(d.Example, "\n")
		fmt.Fprintf(w, "\n %s %s\n", mark, lines[0])
		for _, l := range lines[1:] {
			fmt.Fprintf(w, "     %s\n", l)
		}
		fmt.Fprintf(w, "      %s\n", wrapText(d.Doc, 96, "      "))
	}
}

// wrapText breaks text into lines of at most width characters, continued
// with indent.
func wrapText(text string, width int, indent string) string {
	var b strings.Builder
	line := 0
	for i, word := range strings.Fields(text) {
		if i > 0 {
			if line+1+len(word) > width {
				b.WriteString("\n" + indent)
				line = 0
			} else {
				b.WriteByte(' ')
				line++
			}
		}
		b.WriteString(word)
		line += len(word)
	}
	return b.String()
}
