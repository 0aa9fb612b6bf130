package workflow

import (
	"encoding/json"
	"fmt"

	"github.com/trellis/trellis"
)

// Func is a workflow's code: it runs again from the start on every
// activation of a run, and the journaled primitives (Step, Sleep, Wait,
// Task, Child, All) return what the journal recorded instead of doing it
// again. Everything that is not deterministic (time, randomness, I/O,
// other services) belongs in a Step.
type Func[I, O any] func(c *Context, input I) (O, error)

// registered is one hosted workflow version.
type registered struct {
	name    string
	version int
	run     func(c *Context, input json.RawMessage) (json.RawMessage, error)
}

// Register hosts a workflow version on the engine: Serve registers it on
// the log and works its runs. Registering a name and version twice
// replaces the code. Version must be 1 or more: a change to the code that
// would make recorded runs take another path is a new version (or is
// checked with workflowtest.Replay first).
func Register[I, O any](e *Engine, name string, version int, fn Func[I, O]) error {
	if err := ValidateName("workflow", name); err != nil {
		return err
	}
	if version < 1 || version > MaxVersion {
		return trellis.FieldError("version", "must be 1 to %d, got %d", MaxVersion, version)
	}
	if fn == nil {
		return trellis.FieldError("fn", "is nil")
	}
	run := func(c *Context, raw json.RawMessage) (json.RawMessage, error) {
		var in I
		if len(raw) > 0 {
			if err := json.Unmarshal(raw, &in); err != nil {
				return nil, &InputError{Err: err}
			}
		}
		out, err := fn(c, in)
		if err != nil {
			return nil, err
		}
		b, err := json.Marshal(out)
		if err != nil {
			return nil, fmt.Errorf("encode output: %w", err)
		}
		return b, nil
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.registry[name] == nil {
		e.registry[name] = map[int]registered{}
	}
	e.registry[name][version] = registered{name: name, version: version, run: run}
	return nil
}

// InputError reports a run input that does not decode into the
// workflow's input type: the run fails with it.
type InputError struct{ Err error }

func (e *InputError) Error() string { return "input does not decode: " + e.Err.Error() }

// Unwrap returns the decoding error.
func (e *InputError) Unwrap() error { return e.Err }

// lookup returns the hosted code of a workflow version.
func (e *Engine) lookup(name string, version int) (registered, bool) {
	e.mu.RLock()
	defer e.mu.RUnlock()
	r, ok := e.registry[name][version]
	return r, ok
}

// hosted lists the registered workflow versions.
func (e *Engine) hosted() []registered {
	e.mu.RLock()
	defer e.mu.RUnlock()
	var out []registered
	for _, vs := range e.registry {
		for _, r := range vs {
			out = append(out, r)
		}
	}
	return out
}
