package web_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// buildOrderQuiet builds the example workflow pool
// (workflow/example/order); on failure it reports the error and returns ""
// (it runs on a goroutine of its own, where t.Fatal may not be called).
func buildOrderQuiet(t *testing.T) string {
	bin := filepath.Join(t.TempDir(), "order")
	if out, err := exec.Command("go", "build", "-o", bin, "../workflow/example/order").CombinedOutput(); err != nil {
		t.Errorf("build the order example: %v\n%s", err, out)
		return ""
	}
	return bin
}

// startOrderPool runs the order example's pool against srv; the returned
// function stops it.
func startOrderPool(t *testing.T, bin string, srv *serveBundle) func() {
	t.Helper()
	var logs bytes.Buffer
	cmd := exec.Command(bin, "worker", "--data", srv.data)
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	}
	t.Cleanup(func() {
		stop()
		if t.Failed() {
			t.Logf("order pool output:\n%s", logs.String())
		}
	})
	return stop
}

// request sends a request with a bearer token (when not empty) and
// returns the status and body.
func (b *serveBundle) request(t *testing.T, token, method, path, body string) (int, string) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, b.url+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := b.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(raw)
}

type run struct {
	RunID  string `json:"run_id"`
	Status string `json:"status"`
	Steps  []struct {
		Name, Status string
	} `json:"steps"`
	Output  json.RawMessage `json:"output"`
	Signals []struct {
		Name string          `json:"name"`
		Data json.RawMessage `json:"data"`
	} `json:"signals"`
}

// waitRun polls the run until ok(run) holds (60 s at most).
func (b *serveBundle) waitRun(t *testing.T, id, what string, ok func(run) bool) run {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		var r run
		b.call(t, http.MethodGet, "/v1/workflows/"+id, nil, &r)
		if ok(r) {
			return r
		}
		if time.Now().After(deadline) {
			t.Fatalf("run %s: %s not reached in 60 s: %+v", id, what, r)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestWorkflowsAndActionsInBrowser drives the dashboard's workflow pages
// and its actions in headless Chromium against `trellis serve` and the
// order example's pool: the run list (status filter, live), a run's step
// timeline updating live, a signal with JSON data sent by clicking (bad
// JSON refused in the page), a run cancelled by clicking; a task added,
// several tasks cancelled at once and a queue paused and resumed from the
// page; "Retry all dead letters" only when there are some; the claim
// latency axis wide enough for its values; then, with the server
// restarted with --auth, a reader token sees none of these buttons (the
// server refuses it anyway) and an admin token sees them.
func TestWorkflowsAndActionsInBrowser(t *testing.T) {
	exe := findChromium(t)
	// Both binaries at once: the build is most of this test's time.
	var orderBin string
	built := make(chan struct{})
	go func() {
		defer close(built)
		orderBin = buildOrderQuiet(t)
	}()
	bin := buildTrellis(t)
	<-built
	if orderBin == "" {
		t.FailNow()
	}
	dir := t.TempDir()
	srv := startServeIn(t, dir, bin, nil)
	br := startBrowser(t, exe)
	base := srv.url

	// A task claimed more than ten seconds after it was added: a claim
	// latency of five digits in milliseconds on the overview's chart.
	slow := srv.add(t, "slow", "Claimed late", 3)
	slowAdded := time.Now()

	stopPool := startOrderPool(t, orderBin, srv)
	start := func(id string) string {
		t.Helper()
		deadline := time.Now().Add(60 * time.Second)
		for {
			status, body := srv.request(t, "", http.MethodPost, "/v1/workflows", fmt.Sprintf(`{"workflow":"order","input":{"id":%q}}`, id))
			if status == http.StatusCreated {
				var r run
				if err := json.Unmarshal([]byte(body), &r); err != nil {
					t.Fatal(err)
				}
				return r.RunID
			}
			// The pool registers workflow order when it starts.
			if status != http.StatusNotFound || time.Now().After(deadline) {
				t.Fatalf("start order %s: %d %s", id, status, body)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	waiting := func(r run) bool { return r.Status == "waiting" }
	runA, runB := start("A-1"), start("B-2")
	srv.waitRun(t, runA, "waiting for ship", waiting)
	srv.waitRun(t, runB, "waiting for ship", waiting)

	t.Run("run list", func(t *testing.T) {
		br.goTo(t, base, "#/workflows", "Workflow runs")
		br.waitJS(t, "rows", fmt.Sprintf(`!!document.querySelector('tr[data-run=%q][data-status="waiting"]') && !!document.querySelector('tr[data-run=%q]')`, runA, runB))
		br.waitJS(t, "version in flight", `document.querySelector('tr[data-version="order@1"] td:last-child')?.textContent === '2'`)
		eval[any](t, br, `window.__noReload = 'runs'`)
		runC := start("C-3")
		br.waitJS(t, "new run live", fmt.Sprintf(`!!document.querySelector('tr[data-run=%q]')`, runC))
		// The status filter: completed runs only (none yet).
		eval[any](t, br, `(() => { const s = document.querySelector('select[name=status]'); s.value = 'completed'; s.dispatchEvent(new Event('change', { bubbles: true })) })()`)
		br.waitJS(t, "filtered", `location.hash.includes('status=completed') && document.querySelectorAll('tr[data-run]').length === 0 && document.querySelector('main .empty')?.textContent.includes('No run is completed')`)
		if marker := eval[string](t, br, `window.__noReload`); marker != "runs" {
			t.Fatal("the page was reloaded")
		}
		br.checkPage(t, "workflows")
		srv.waitRun(t, runC, "waiting for ship", waiting)
	})

	t.Run("run timeline and signal", func(t *testing.T) {
		br.goTo(t, base, "#/workflows/"+runA, "Run")
		br.waitJS(t, "steps", `['reserve', 'charge'].every(n => document.querySelector('ol.steps li[data-step="' + n + '"][data-status="completed"]')) && !!document.querySelector('ol.steps li[data-kind="signal"][data-status="pending"]')`)
		br.waitJS(t, "signal form", `document.querySelector('form[aria-label="Send a signal"] input[name=name]')?.value === 'ship' && !!document.querySelector('button[data-action=cancel-run]')`)
		eval[any](t, br, `window.__noReload = 'run'`)
		// Data that is not JSON is refused in the page; nothing is sent.
		br.run(t, "bad data", chromedp.SetValue(chromedp.CSS(`textarea[name=data]`), `{"carrier": ups}`),
			chromedp.Click(chromedp.CSS(`button[data-action=signal]`)))
		br.waitJS(t, "refused", `document.querySelector('[data-testid="signal-problem"]')?.textContent.includes('not JSON')`)
		if r := srv.waitRun(t, runA, "read", func(run) bool { return true }); len(r.Signals) != 0 {
			t.Fatalf("bad JSON was sent: %+v", r.Signals)
		}
		br.run(t, "signal", chromedp.SetValue(chromedp.CSS(`textarea[name=data]`), `{"carrier": "ups"}`),
			chromedp.Click(chromedp.CSS(`button[data-action=signal]`)))
		// Live: the timeline grows to the ship step and the run completes.
		br.waitJS(t, "completed live", `document.querySelector('main h1 .badge')?.textContent === 'completed' && !!document.querySelector('ol.steps li[data-step="ship"][data-status="completed"]') && document.querySelector('[data-testid="run-output"]')?.textContent.includes('"shipped_by": "ups"')`)
		br.waitJS(t, "no buttons on a finished run", `!document.querySelector('button[data-action=cancel-run]') && !document.querySelector('form[aria-label="Send a signal"]')`)
		if marker := eval[string](t, br, `window.__noReload`); marker != "run" {
			t.Fatal("the page was reloaded")
		}
		r := srv.waitRun(t, runA, "completed", func(r run) bool { return r.Status == "completed" })
		if len(r.Signals) != 1 || r.Signals[0].Name != "ship" || string(r.Signals[0].Data) != `{"carrier":"ups"}` {
			t.Fatalf("signals recorded: %+v", r.Signals)
		}
		br.checkPage(t, "workflow-run")

		// On a phone the list and the run fit the screen's width.
		br.run(t, "phone screen", chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(2), chromedp.EmulateMobile))
		for _, p := range []struct{ hash, heading, ready string }{
			{"#/workflows", "Workflow runs", `document.querySelectorAll('tr[data-run]').length === 3`},
			{"#/workflows/" + runA, "Run", `document.querySelectorAll('ol.steps li').length === 5`},
		} {
			br.goTo(t, base, p.hash, p.heading)
			br.waitJS(t, "content", p.ready)
			if overflow := eval[int](t, br, `document.documentElement.scrollWidth - window.innerWidth`); overflow > 1 {
				t.Errorf("%s: the page is %d px wider than a phone screen", p.hash, overflow)
			}
		}
		br.screenshot(t, "workflow-run-phone")
		br.run(t, "laptop screen", chromedp.EmulateViewport(1280, 900))
	})

	t.Run("run cancelled by clicking", func(t *testing.T) {
		br.goTo(t, base, "#/workflows/"+runB, "Run")
		br.run(t, "cancel", chromedp.Click(chromedp.CSS(`button[data-action=cancel-run]`)))
		br.waitJS(t, "confirmation", `document.querySelector('dialog.confirm')?.open === true && document.querySelector('dialog.confirm').textContent.includes('compensations')`)
		br.run(t, "confirm", chromedp.Click(chromedp.CSS(`dialog.confirm button.primary`)))
		br.waitJS(t, "cancelled live", `document.querySelector('main h1 .badge')?.textContent === 'cancelled'`)
		srv.waitRun(t, runB, "cancelled", func(r run) bool { return r.Status == "cancelled" })
	})

	t.Run("act on tasks and queues", func(t *testing.T) {
		// Add a task from the page.
		br.goTo(t, base, "#/tasks?queue=acts", "Tasks")
		br.waitJS(t, "no retry-all without dead letters", `!!document.querySelector('details.add-task') && !document.querySelector('button[data-action=retry-all-dead]')`)
		br.run(t, "open the form", chromedp.Click(chromedp.CSS(`details.add-task summary`)))
		br.run(t, "fill", chromedp.SetValue(chromedp.CSS(`textarea[name=objective]`), "Added from the dashboard"),
			chromedp.Click(chromedp.CSS(`button[data-action=add-task]`)))
		br.waitJS(t, "row", `[...document.querySelectorAll('tr[data-task]')].some(r => r.textContent.includes('Added from the dashboard') && r.dataset.status === 'queued')`)
		var page struct {
			Tasks []struct {
				TaskID    string `json:"task_id"`
				Objective string `json:"objective"`
				Status    string `json:"status"`
			} `json:"tasks"`
		}
		srv.call(t, http.MethodGet, "/v1/queue/tasks?queue=acts", nil, &page)
		if len(page.Tasks) != 1 || page.Tasks[0].Objective != "Added from the dashboard" {
			t.Fatalf("queue acts holds %+v", page.Tasks)
		}
		// An empty objective is refused by the server, and said.
		eval[any](t, br, `document.querySelector('textarea[name=objective]').removeAttribute('required')`)
		br.run(t, "add nothing", chromedp.SetValue(chromedp.CSS(`textarea[name=objective]`), "   "), chromedp.Click(chromedp.CSS(`button[data-action=add-task]`)))
		br.waitJS(t, "refusal shown", `document.querySelector('[data-testid="add-problem"]')?.textContent.includes('objective')`)

		// Cancel two of three tasks at once.
		var ids []string
		for i := range 3 {
			ids = append(ids, srv.add(t, "acts", fmt.Sprintf("Cancel candidate %d", i), 3).TaskID)
		}
		br.waitJS(t, "rows", `document.querySelectorAll('tr[data-task]').length === 4`)
		for _, id := range ids[:2] {
			br.run(t, "select", chromedp.Click(chromedp.CSS(fmt.Sprintf(`tr[data-task=%q] input[type=checkbox]`, id))))
		}
		br.run(t, "cancel selected", chromedp.Click(chromedp.CSS(`button[data-action=cancel-selected]`)))
		br.waitJS(t, "confirmation", `document.querySelector('dialog.confirm')?.open === true && document.querySelector('dialog.confirm').textContent.includes('Cancel 2 tasks?')`)
		br.run(t, "confirm", chromedp.Click(chromedp.CSS(`dialog.confirm button.primary`)))
		br.waitJS(t, "cancelled rows", fmt.Sprintf(`document.querySelector('tr[data-task=%q]')?.dataset.status === 'cancelled' && document.querySelector('tr[data-task=%q]')?.dataset.status === 'cancelled'`, ids[0], ids[1]))
		for i, id := range ids {
			var got task
			srv.call(t, http.MethodGet, "/v1/queue/tasks/"+id, nil, &got)
			if want := map[bool]string{true: "cancelled", false: "queued"}[i < 2]; got.Status != want {
				t.Errorf("task %d is %s, want %s", i, got.Status, want)
			}
		}

		// "Retry all dead letters" appears with a dead letter, and goes
		// when it is retried.
		br.goTo(t, base, "#/tasks?queue=dying", "Tasks")
		br.waitJS(t, "page rendered", `document.documentElement.dataset.whoami === 'admin' && !!document.querySelector('details.add-task')`)
		if n := eval[int](t, br, `document.querySelectorAll('button[data-action=retry-all-dead]').length`); n != 0 {
			t.Fatal("Retry all dead letters is offered for a queue without any")
		}
		srv.deadLetter(t, "dying", "Dies once")
		br.waitJS(t, "retry-all shown", `!!document.querySelector('button[data-action=retry-all-dead]')`)
		br.run(t, "retry all", chromedp.Click(chromedp.CSS(`button[data-action=retry-all-dead]`)))
		br.waitJS(t, "confirmation", `document.querySelector('dialog.confirm')?.open === true`)
		br.run(t, "confirm", chromedp.Click(chromedp.CSS(`dialog.confirm button.primary`)))
		br.waitJS(t, "retry-all gone", `!document.querySelector('tr[data-status="dead"]') && !document.querySelector('button[data-action=retry-all-dead]')`)
		br.checkPage(t, "tasks-actions")

		// Pause and resume the queue from the overview.
		br.goTo(t, base, "#/", "Overview")
		br.run(t, "pause", chromedp.Click(chromedp.CSS(`[data-queue="acts"] button[data-action=pause]`)))
		br.waitJS(t, "confirmation", `document.querySelector('dialog.confirm')?.open === true && document.querySelector('dialog.confirm').textContent.includes('Pause queue acts?')`)
		br.run(t, "confirm", chromedp.Click(chromedp.CSS(`dialog.confirm button.primary`)))
		br.waitJS(t, "paused", `!!document.querySelector('[data-queue="acts"] [data-state="paused"]') && !!document.querySelector('[data-queue="acts"] button[data-action=resume]')`)
		var controls struct {
			Paused bool `json:"paused"`
		}
		srv.call(t, http.MethodGet, "/v1/queues/acts/controls", nil, &controls)
		if !controls.Paused {
			t.Fatal("the queue is not paused after the click")
		}
		br.run(t, "resume", chromedp.Click(chromedp.CSS(`[data-queue="acts"] button[data-action=resume]`)))
		br.waitJS(t, "confirmation", `document.querySelector('dialog.confirm')?.open === true`)
		br.run(t, "confirm", chromedp.Click(chromedp.CSS(`dialog.confirm button.primary`)))
		br.waitJS(t, "running", `!!document.querySelector('[data-queue="acts"] [data-state="running"]')`)
		srv.call(t, http.MethodGet, "/v1/queues/acts/controls", nil, &controls)
		if controls.Paused {
			t.Fatal("the queue is still paused after the click")
		}
	})

	t.Run("claim latency axis fits its values", func(t *testing.T) {
		if wait := 11*time.Second - time.Since(slowAdded); wait > 0 {
			time.Sleep(wait) // the claim must come ten seconds after the add
		}
		if got := srv.next(t, "slow", "w-slow"); got.TaskID != slow.TaskID {
			t.Fatalf("claimed %s, want %s", got.TaskID, slow.TaskID)
		}
		br.goTo(t, base, "#/", "Overview")
		// The latency chart is the second of the queue's charts.
		const box = `document.querySelectorAll('[data-queue="slow"] .chart-box')[1]`
		br.waitJS(t, "five-digit values", box+`?.dataset.yValues && JSON.parse(`+box+`.dataset.yValues).some(v => v.replace(/\D/g, '').length >= 5)`)
		type axis struct {
			Values   []string `json:"values"`
			Widest   float64  `json:"widest"`
			Size     float64  `json:"size"`
			Reserved float64  `json:"reserved"`
		}
		a := eval[axis](t, br, `(() => { const b = `+box+`; const values = JSON.parse(b.dataset.yValues);
			const ctx = document.createElement('canvas').getContext('2d'); ctx.font = b.dataset.yFont;
			return { values, widest: Math.max(...values.map(v => ctx.measureText(v).width)), size: Number(b.dataset.ySize), reserved: Number(b.dataset.yReserved) } })()`)
		t.Logf("latency axis: values %q, widest %.1f px, axis %.0f px of which ticks and gap %.0f px", a.Values, a.Widest, a.Size, a.Reserved)
		if a.Widest+a.Reserved > a.Size {
			t.Errorf("the widest latency value (%.1f px) and the ticks (%.0f px) need more than the axis's %.0f px: they run under the axis label", a.Widest, a.Reserved, a.Size)
		}
		br.screenshot(t, "overview-latency")
	})

	t.Run("roles", func(t *testing.T) {
		// The same log, now served with --auth: a reader sees the runs and
		// tasks but no button that acts; the server refuses it anyway.
		stopPool()
		srv.stop()
		admin := "trellis_dashboard-roles-admin-token-0123456789abcdef"
		secure := startServeIn(t, dir, bin, []string{"TRELLIS_ADMIN_TOKEN=" + admin}, "--auth")
		tokens := map[string]string{"admin": admin}
		for _, role := range []string{"reader", "worker"} {
			cmd := exec.Command(bin, "token", "create", "--name", "dash-"+role, "--role", role, "--json", "--data", secure.data)
			cmd.Env = append(os.Environ(), "TRELLIS_TOKEN="+admin)
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("token create %s: %v %s", role, err, out)
			}
			var tok struct {
				Token string `json:"token"`
			}
			if err := json.Unmarshal(out, &tok); err != nil {
				t.Fatalf("token create %s: %s: %v", role, out, err)
			}
			tokens[role] = tok.Token
		}
		var runs struct {
			Runs []struct {
				RunID  string `json:"run_id"`
				Status string `json:"status"`
			} `json:"runs"`
		}
		status, body := secure.request(t, tokens["reader"], http.MethodGet, "/v1/workflows?status=waiting", "")
		if status != http.StatusOK || json.Unmarshal([]byte(body), &runs) != nil || len(runs.Runs) != 1 {
			t.Fatalf("waiting runs as a reader: %d %s", status, body)
		}
		runC := runs.Runs[0].RunID
		var acts []string
		for _, id := range []string{"acts"} {
			status, body := secure.request(t, tokens["reader"], http.MethodGet, "/v1/queue/tasks?status=queued&queue="+id, "")
			var page struct {
				Tasks []task `json:"tasks"`
			}
			if status != http.StatusOK || json.Unmarshal([]byte(body), &page) != nil || len(page.Tasks) == 0 {
				t.Fatalf("queued tasks of acts: %d %s", status, body)
			}
			for _, tk := range page.Tasks {
				acts = append(acts, tk.TaskID)
			}
		}
		as := func(role string) {
			br.run(t, "open "+role, chromedp.Navigate(secure.url+"/ui/assets/none"))
			eval[any](t, br, fmt.Sprintf(`sessionStorage.setItem('trellis.token', %q)`, tokens[role]))
		}

		as("reader")
		br.goTo(t, secure.url, "#/workflows/"+runC, "Run")
		br.waitJS(t, "role known", `document.documentElement.dataset.whoami === 'reader'`)
		br.waitJS(t, "reader told", `document.querySelector('[data-testid="no-signal"]')?.textContent.includes('role reader')`)
		if n := eval[int](t, br, `document.querySelectorAll('form[aria-label="Send a signal"], button[data-action=cancel-run]').length`); n != 0 {
			t.Errorf("a reader is offered %d workflow actions", n)
		}
		br.checkPage(t, "workflow-run-reader")
		for _, page := range []struct{ hash, heading, ready string }{
			{"#/tasks?queue=acts", "Tasks", `document.querySelectorAll('tr[data-task]').length >= 1`},
			{"#/tasks/" + acts[0], "Task", `document.querySelector('main h1 .badge')?.textContent === 'queued'`},
			{"#/", "Overview", `!!document.querySelector('[data-queue="acts"] [data-state="running"]')`},
		} {
			br.goTo(t, secure.url, page.hash, page.heading)
			br.waitJS(t, "page ready", page.ready)
			// The page has rendered with the caller's role: no action.
			br.waitJS(t, "role known", `document.documentElement.dataset.whoami === 'reader'`)
			if n := eval[int](t, br, `document.querySelectorAll('details.add-task, main input[type=checkbox], button[data-action]').length`); n != 0 {
				t.Errorf("%s: a reader is offered %d actions: %s", page.hash, n, eval[string](t, br, `[...document.querySelectorAll('details.add-task, main input[type=checkbox], button[data-action]')].map(e => e.outerHTML.slice(0, 80)).join(' | ')`))
			}
		}
		// The server refuses the reader whatever the page shows.
		for _, c := range []struct{ method, path, body, op string }{
			{http.MethodPost, "/v1/workflows/" + runC + "/signal", `{"name":"ship","data":{"carrier":"x"}}`, "workflow.signal"},
			{http.MethodPost, "/v1/workflows/" + runC + "/cancel", `{}`, "workflow.cancel"},
			{http.MethodPost, "/v1/queue/tasks", `{"objective":"x","queue":"acts"}`, "queue.add"},
			{http.MethodPost, "/v1/queue/tasks/" + acts[0] + "/cancel", `{}`, "queue.cancel"},
			{http.MethodPost, "/v1/queues/acts/controls", `{"action":"pause"}`, "queue.control"},
		} {
			status, body := secure.request(t, tokens["reader"], c.method, c.path, c.body)
			if status != http.StatusForbidden || !strings.Contains(body, "may not "+c.op) {
				t.Errorf("%s %s as a reader: %d %s; want 403 naming %s", c.method, c.path, status, body, c.op)
			}
		}

		// A worker may signal, not cancel.
		as("worker")
		br.goTo(t, secure.url, "#/workflows/"+runC, "Run")
		br.waitJS(t, "worker may signal", `!!document.querySelector('form[aria-label="Send a signal"]') && !document.querySelector('button[data-action=cancel-run]')`)

		// An admin sees every action.
		as("admin")
		br.goTo(t, secure.url, "#/workflows/"+runC, "Run")
		br.waitJS(t, "admin actions", `!!document.querySelector('form[aria-label="Send a signal"]') && !!document.querySelector('button[data-action=cancel-run]')`)
		br.goTo(t, secure.url, "#/tasks?queue=acts", "Tasks")
		br.waitJS(t, "admin task actions", `!!document.querySelector('details.add-task') && document.querySelectorAll('main input[type=checkbox]').length >= 1`)
		br.goTo(t, secure.url, "#/", "Overview")
		br.waitJS(t, "admin queue actions", `!!document.querySelector('[data-queue="acts"] button[data-action=pause]')`)
	})

	br.mu.Lock()
	problems := slices.Clone(br.problems)
	br.mu.Unlock()
	for _, p := range problems {
		t.Errorf("the browser reported: %s", p)
	}
}
