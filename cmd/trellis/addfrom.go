package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/trellis/trellis"
)

// maxAddCallBytes bounds the JSON of one add_many call (a NATS message
// holds 1 MiB by default).
const maxAddCallBytes = 512 << 10

// addFrom adds every task of a JSONL file (one add request per line):
// every line is checked first, naming its line, so a bad file adds
// nothing; then the tasks go in calls of up to trellis.MaxAddMany. The
// output lists each task (or why it was not added, by line); the exit code
// is that of the first task not added.
func (a *app) addFrom(cmd *cobra.Command, path, queue string, asJSON bool) error {
	var r io.Reader = os.Stdin
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return trellis.FieldError("from", "%v", err)
		}
		defer f.Close()
		r = f
	}
	var reqs []trellis.AddTaskRequest
	var lines []int
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 2<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		var req trellis.AddTaskRequest
		if err := trellis.DecodeRequest([]byte(line), &req); err != nil {
			return lineError(path, n, err)
		}
		if req.Queue == "" {
			req.Queue = queue
		}
		if err := req.Normalize(); err != nil {
			return lineError(path, n, err)
		}
		reqs, lines = append(reqs, req), append(lines, n)
	}
	if err := sc.Err(); err != nil {
		return trellis.FieldError("from", "read %s: %v", path, err)
	}
	if len(reqs) == 0 {
		return trellis.FieldError("from", "%s holds no add request", path)
	}
	res := &trellis.AddManyResult{}
	err := a.call(cmd, false, func(ctx context.Context, s *session) (any, error) {
		for start := 0; start < len(reqs); {
			end, size := start, 0
			for end < len(reqs) && end-start < trellis.MaxAddMany {
				size += len(reqs[end].Objective) + len(reqs[end].Acceptance) + 256
				for _, in := range reqs[end].Inputs {
					size += len(in) + 4
				}
				if end > start && size > maxAddCallBytes {
					break
				}
				end++
			}
			part, err := s.queue.AddMany(ctx, trellis.AddManyRequest{Tasks: reqs[start:end]})
			if err != nil {
				return nil, err
			}
			for _, e := range part.Errors {
				e.Index += start
				res.Errors = append(res.Errors, e)
			}
			res.Tasks = append(res.Tasks, part.Tasks...)
			start = end
		}
		return nil, nil
	}, func(any) {})
	if err != nil {
		return err
	}
	if asJSON {
		if err := printJSON(a.stdout, res); err != nil {
			return err
		}
	} else {
		added := 0
		for _, t := range res.Tasks {
			if t != nil {
				added++
			}
		}
		fmt.Fprintf(a.stdout, "added %d of %d tasks from %s\n", added, len(reqs), path)
		for i, t := range res.Tasks {
			if t != nil {
				fmt.Fprintf(a.stdout, "  line %d: %s  %s  %s\n", lines[i], t.TaskID, t.Queue, t.Objective)
			}
		}
	}
	if len(res.Errors) > 0 {
		e := res.Errors[0]
		for _, e := range res.Errors {
			fmt.Fprintf(a.stderr, "trellis: line %d not added: %s: %s\n", lines[e.Index], e.Code, e.Message)
		}
		return &trellis.Error{Code: e.Code, Field: e.Field, Message: fmt.Sprintf("%d of %d tasks not added (line %d: %s)", len(res.Errors), len(reqs), lines[e.Index], e.Message)}
	}
	return nil
}

// lineError names the line of a JSONL file a request error comes from.
func lineError(path string, line int, err error) error {
	te := trellis.AsError(err)
	field := fmt.Sprintf("%s:%d", path, line)
	if te.Field != "" {
		field += ": " + te.Field
	}
	return &trellis.Error{Code: te.Code, Field: field, Message: te.Message, Err: err}
}
