package steps

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// maxWait bounds "wait up to N seconds".
const maxWait = time.Hour

func timeSteps() []Definition {
	return []Definition{{
		Pattern: `^wait up to (\d+) seconds? until (.+)$`,
		Example: `Then wait up to 30 seconds until queue "jobs" has 5 tasks "done"`,
		Doc: "Repeats a check (any step marked check in this list, without its keyword) until it holds, and fails with the " +
			"check's last error when it still does not after N seconds. Use it for whatever workers and agents do in the background.",
		run: func(w *World) any { return w.waitUntil },
	}}
}

func (w *World) waitUntil(ctx context.Context, secs int, text string) error {
	within := time.Duration(secs) * time.Second
	if within > maxWait {
		return fmt.Errorf("wait up to %d seconds: at most %d allowed", secs, int(maxWait.Seconds()))
	}
	var checks []Definition
	var def *Definition
	for _, d := range Vocabulary() {
		if !d.Check {
			continue
		}
		checks = append(checks, d)
		if d.Matches(text) {
			def = &d
		}
	}
	if def == nil {
		var lines []string
		for _, d := range suggestAmong(checks, text, 3) {
			lines = append(lines, d.exampleText())
		}
		return fmt.Errorf("%q is not a check that can be waited on; the closest checks are:\n    %s", text, strings.Join(lines, "\n    "))
	}
	deadline := time.Now().Add(within)
	poll := 50 * time.Millisecond
	for {
		err := def.invoke(ctx, w, text)
		if err == nil {
			return nil
		}
		if errors.Is(err, errNoServer) {
			return err
		}
		if !time.Now().Before(deadline) {
			return fmt.Errorf("still not true after %d seconds: %w%s", secs, err, w.workerTrouble())
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("wait interrupted: %w (last: %v)", ctx.Err(), err)
		case <-time.After(min(poll, time.Until(deadline))):
		}
		poll = min(2*poll, 500*time.Millisecond)
	}
}
