package steps

import (
	"context"
	"fmt"
	"reflect"
	"regexp"
	"strconv"
	"strings"

	"github.com/cucumber/godog"
)

// The groups of the vocabulary, in the order `trellis features steps`
// prints them.
const (
	GroupServer  = "Server"
	GroupQueue   = "Queues and tasks"
	GroupWorkers = "Worker pools and processes"
	GroupVine    = "VINE graphs"
	GroupMemory  = "Agent memory"
	GroupTime    = "Time"
	GroupLog     = "Assertions over the log"
)

// GroupWorkflows is the group of the durable workflow steps.
const GroupWorkflows = "Durable workflows"

// Definition is one step of the vocabulary: the single source from which
// the steps are registered with godog, listed by `trellis features steps`,
// and suggested when a feature uses a step that does not exist.
type Definition struct {
	// Group is the part of the vocabulary the step belongs to.
	Group string `json:"group"`
	// Pattern is the step's anchored regular expression.
	Pattern string `json:"pattern"`
	// Example is a step a feature can use as it is, keyword included; a
	// doc string or a table follows on the next lines when the step takes
	// one.
	Example string `json:"example"`
	// Doc says what the step does.
	Doc string `json:"doc"`
	// Check marks an assertion: it changes nothing, so "wait up to N
	// seconds until ..." may repeat it.
	Check bool `json:"check"`

	// run returns the step's function for a world: a method value
	// func(context.Context, args...) error, whose args are string or int
	// for the pattern's groups, then a *godog.DocString or a *godog.Table
	// when the step takes one.
	run func(w *World) any
	re  *regexp.Regexp
}

// Vocabulary returns every step definition, grouped and in a stable order.
func Vocabulary() []Definition {
	groups := []struct {
		name string
		defs []Definition
	}{
		{GroupServer, serverSteps()},
		{GroupQueue, append(queueSteps(), schedulingSteps()...)},
		{GroupWorkers, workerSteps()},
		{GroupVine, vineSteps()},
		{GroupMemory, memorySteps()},
		{GroupWorkflows, workflowSteps()},
		{GroupRetention, retentionSteps()},
		{GroupTime, timeSteps()},
		{GroupLog, logSteps()},
	}
	var defs []Definition
	for _, g := range groups {
		for _, d := range g.defs {
			d.Group = g.name
			d.re = regexp.MustCompile(d.Pattern)
			defs = append(defs, d)
		}
	}
	return defs
}

// Matches reports whether the step text (without its keyword) matches the
// definition.
func (d Definition) Matches(text string) bool {
	return d.regexp().MatchString(text)
}

func (d Definition) regexp() *regexp.Regexp {
	if d.re == nil {
		return regexp.MustCompile(d.Pattern)
	}
	return d.re
}

var (
	typeContext   = reflect.TypeOf((*context.Context)(nil)).Elem()
	typeError     = reflect.TypeOf((*error)(nil)).Elem()
	typeDocString = reflect.TypeOf((*godog.DocString)(nil))
	typeTable     = reflect.TypeOf((*godog.Table)(nil))
)

// validate checks that run has the documented shape and takes one
// argument per group of the pattern.
func (d Definition) validate() error {
	if d.run == nil {
		return fmt.Errorf("step %s has no function", d.Pattern)
	}
	fn := d.run(&World{})
	t := reflect.TypeOf(fn)
	if t == nil || t.Kind() != reflect.Func {
		return fmt.Errorf("step %s: run gives %T, not a function", d.Pattern, fn)
	}
	if t.NumIn() < 1 || t.In(0) != typeContext || t.NumOut() != 1 || t.Out(0) != typeError {
		return fmt.Errorf("step %s: the function must be func(context.Context, ...) error, is %s", d.Pattern, t)
	}
	groups := 0
	for i := 1; i < t.NumIn(); i++ {
		switch p := t.In(i); {
		case p.Kind() == reflect.String || p.Kind() == reflect.Int:
			groups++
		case (p == typeDocString || p == typeTable) && i == t.NumIn()-1:
		default:
			return fmt.Errorf("step %s: argument %d has unsupported type %s", d.Pattern, i, p)
		}
	}
	if n := d.regexp().NumSubexp(); n != groups {
		return fmt.Errorf("step %s: the pattern has %d groups, the function takes %d", d.Pattern, n, groups)
	}
	return nil
}

// invoke runs the step for text (which must match) outside godog: how
// "wait up to N seconds until ..." repeats a check.
func (d Definition) invoke(ctx context.Context, w *World, text string) error {
	m := d.regexp().FindStringSubmatch(text)
	if m == nil {
		return fmt.Errorf("%q does not match %s", text, d.Pattern)
	}
	fn := reflect.ValueOf(d.run(w))
	t := fn.Type()
	args := []reflect.Value{reflect.ValueOf(ctx)}
	for i := 1; i < t.NumIn(); i++ {
		s := m[i]
		switch t.In(i).Kind() {
		case reflect.String:
			args = append(args, reflect.ValueOf(s))
		case reflect.Int:
			n, err := strconv.Atoi(s)
			if err != nil {
				return fmt.Errorf("%q is not a number: %w", s, err)
			}
			args = append(args, reflect.ValueOf(n))
		default:
			return fmt.Errorf("step %q takes a doc string or a table and cannot be repeated", text)
		}
	}
	out := fn.Call(args)
	err, _ := out[0].Interface().(error)
	return err
}

// keywords are the Gherkin step keywords (English).
var keywords = []string{"Given ", "When ", "Then ", "And ", "But ", "* "}

// StripKeyword returns a step line without its leading keyword.
func StripKeyword(line string) string {
	line = strings.TrimSpace(line)
	for _, k := range keywords {
		if rest, ok := strings.CutPrefix(line, k); ok {
			return strings.TrimSpace(rest)
		}
	}
	return line
}

// exampleText is the step text of an example: its first line without the
// keyword.
func (d Definition) exampleText() string {
	first, _, _ := strings.Cut(d.Example, "\n")
	return StripKeyword(first)
}
