package workers

import (
	"context"
	"errors"
	"sync"

	"github.com/trellis/trellis"
)

// Handler does the work of one task. It returns the checkpoint of a
// finished task, or an error for a failed attempt (retried until the task's
// max attempts). It should count its steps and tool calls on progress and
// stop when progress reports the budget spent; returning that error (or
// any error wrapping ErrBudgetExhausted) ends the task as failed with a
// checkpoint marked budget_exhausted, without retries. ctx is cancelled
// when the pool drains past its grace period: the task is then released
// back to the queue.
type Handler interface {
	Handle(ctx context.Context, task *trellis.Task, progress *Progress) (*trellis.Checkpoint, error)
}

// HandlerFunc adapts a function to Handler.
type HandlerFunc func(ctx context.Context, task *trellis.Task, progress *Progress) (*trellis.Checkpoint, error)

// Handle implements Handler.
func (f HandlerFunc) Handle(ctx context.Context, task *trellis.Task, progress *Progress) (*trellis.Checkpoint, error) {
	return f(ctx, task, progress)
}

// ErrTimeout fails an attempt that ran past its timeout (the task's own,
// or the pool's TaskTimeout): the handler's context is cancelled, and the
// attempt is retried per the task's max attempts.
var ErrTimeout = errors.New("timeout")

// ErrBudgetExhausted is returned by Progress when a task's step or
// tool-call budget is spent.
var ErrBudgetExhausted = &trellis.Error{Code: trellis.CodeBudgetExhausted, Message: "the task's budget is spent"}

// Progress counts a task's steps and tool calls against its budget. It is
// safe for concurrent use.
type Progress struct {
	mu     sync.Mutex
	budget trellis.Budget
	usage  trellis.Usage
}

// NewProgress returns a reporter for a budget.
func NewProgress(b trellis.Budget) *Progress { return &Progress{budget: b} }

// Step counts one step. It returns ErrBudgetExhausted once the steps
// exceed the budget.
func (p *Progress) Step() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.usage.StepsUsed++
	if p.usage.StepsUsed > p.budget.MaxSteps {
		return ErrBudgetExhausted
	}
	return nil
}

// ToolCall counts one tool call. It returns ErrBudgetExhausted once the
// tool calls exceed the budget.
func (p *Progress) ToolCall() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.usage.ToolCallsUsed++
	if p.usage.ToolCallsUsed > p.budget.MaxToolCalls {
		return ErrBudgetExhausted
	}
	return nil
}

// Usage returns what has been counted so far.
func (p *Progress) Usage() trellis.Usage {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.usage
}
