package web_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// The browser test drives the dashboard in a real headless Chromium
// against a real `trellis serve` (the binary, built from this tree). It
// needs Chromium: Debian's `chromium` package (apt-get install -y
// chromium), or any Chrome/Chromium binary named by TRELLIS_CHROMIUM.
// Without one it fails, saying how to install it.
//
// Screenshots of every page go to TRELLIS_SCREENSHOTS (default
// web/testout/).

// findChromium returns the browser to drive.
func findChromium(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("TRELLIS_CHROMIUM"); p != "" {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("TRELLIS_CHROMIUM=%s: %v", p, err)
		}
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "headless_shell"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatal("the dashboard's browser tests need Chromium and none was found: install it with `apt-get install -y chromium` " +
		"(Debian/Ubuntu; .ci/run does this), or set TRELLIS_CHROMIUM to a Chrome or Chromium binary")
	return ""
}

// serveBundle is a running `trellis serve` and what the test seeded.
type serveBundle struct {
	bin, data, ws, url string
	client             *http.Client
	// stop ends the server (SIGTERM, then kill after 20 s); it runs at
	// the test's end too.
	stop func()
}

// buildTrellis builds the trellis binary from this tree.
func buildTrellis(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "trellis")
	if out, err := exec.Command("go", "build", "-o", bin, "../cmd/trellis").CombinedOutput(); err != nil {
		t.Fatalf("build trellis: %v\n%s", err, out)
	}
	return bin
}

// startServe starts `trellis serve` on free ports with a temporary data
// directory and workspace, with extra serve flags and environment.
func startServe(t *testing.T, bin string, env []string, flags ...string) *serveBundle {
	t.Helper()
	return startServeIn(t, t.TempDir(), bin, env, flags...)
}

// startServeIn starts `trellis serve` with its data directory and
// workspace under dir (a server started again in the same dir finds the
// log the earlier one left).
func startServeIn(t *testing.T, dir, bin string, env []string, flags ...string) *serveBundle {
	t.Helper()
	b := &serveBundle{bin: bin, data: filepath.Join(dir, "data"), ws: filepath.Join(dir, "ws"), client: &http.Client{Timeout: 60 * time.Second}}
	if err := os.MkdirAll(b.ws, 0o755); err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	args := append([]string{"serve", "--data", b.data, "--http-addr", "127.0.0.1:0", "--nats-addr", "127.0.0.1:0", "--workspace", b.ws}, flags...)
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Dir = b.ws
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var waitErr error
	done := make(chan struct{}) // closed when the server has exited
	go func() { waitErr = cmd.Wait(); close(done) }()
	var once sync.Once
	b.stop = func() {
		once.Do(func() {
			_ = cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-done:
			case <-time.After(20 * time.Second):
				_ = cmd.Process.Kill()
				<-done
			}
		})
	}
	t.Cleanup(func() {
		b.stop()
		if t.Failed() {
			t.Logf("trellis serve output:\n%s", logs.String())
		}
	})
	deadline := time.Now().Add(60 * time.Second)
	for {
		raw, err := os.ReadFile(filepath.Join(b.data, "serve.json"))
		var info struct {
			HTTPURL string `json:"http_url"`
		}
		if err == nil && json.Unmarshal(raw, &info) == nil && info.HTTPURL != "" {
			b.url = info.HTTPURL
			break
		}
		select {
		case <-done:
			t.Fatalf("trellis serve exited: %v\n%s", waitErr, logs.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("trellis serve did not record its address in 60 s\n%s", logs.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	return b
}

// call sends a JSON request to the API and decodes the answer into out.
func (b *serveBundle) call(t *testing.T, method, path string, body, out any) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		raw, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, b.url+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := b.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	if res.StatusCode >= 300 {
		t.Fatalf("%s %s: %d %s", method, path, res.StatusCode, raw)
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			t.Fatalf("%s %s: decode %s: %v", method, path, raw, err)
		}
	}
}

type task struct {
	TaskID string `json:"task_id"`
	Status string `json:"status"`
}

func (b *serveBundle) add(t *testing.T, queue, objective string, maxAttempts int) task {
	t.Helper()
	var out task
	b.call(t, http.MethodPost, "/v1/queue/tasks", map[string]any{"queue": queue, "objective": objective, "max_attempts": maxAttempts}, &out)
	return out
}

func (b *serveBundle) next(t *testing.T, queue, worker string) task {
	t.Helper()
	var out task
	b.call(t, http.MethodPost, "/v1/queue/next", map[string]any{"queue": queue, "worker": worker}, &out)
	if out.TaskID == "" {
		t.Fatalf("nothing to claim in %s", queue)
	}
	return out
}

// deadLetter adds a one-attempt task and fails it with a retry: dead.
func (b *serveBundle) deadLetter(t *testing.T, queue, objective string) task {
	t.Helper()
	b.add(t, queue, objective, 1)
	claimed := b.next(t, queue, "w-2")
	var out task
	b.call(t, http.MethodPost, "/v1/queue/tasks/"+claimed.TaskID+"/fail", map[string]any{"worker": "w-2", "error": "the disk is full", "retry": true}, &out)
	if out.Status != "dead" {
		t.Fatalf("dead letter is %s", out.Status)
	}
	return out
}

// browser is a page in a headless Chromium, with what it reported.
type browser struct {
	ctx   context.Context
	shots string
	loads int

	mu       sync.Mutex
	problems []string
}

func startBrowser(t *testing.T, exe string) *browser {
	t.Helper()
	// Chromium keeps its process-singleton socket in TMPDIR and leaves it
	// behind: it gets a directory of its own, removed after it stops
	// (this cleanup runs after the browser's, registered later). A short
	// one: t.TempDir's path with the test's name can make the socket's
	// path longer than a Unix socket's 108 bytes, and Chromium then
	// refuses to start.
	tmp, err := os.MkdirTemp("", "cr")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(tmp) })
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(exe),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("disable-default-apps", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.Flag("hide-scrollbars", true),
		chromedp.Flag("mute-audio", true),
		chromedp.WindowSize(1280, 900),
		chromedp.Env("TZ=UTC", "TMPDIR="+tmp),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	shots := os.Getenv("TRELLIS_SCREENSHOTS")
	if shots == "" {
		shots = "testout"
	}
	if err := os.MkdirAll(shots, 0o755); err != nil {
		t.Fatal(err)
	}
	br := &browser{shots: shots}
	ctx, cancel := chromedp.NewContext(actx, chromedp.WithListener(func(ev any) {
		switch e := ev.(type) {
		case *runtime.EventExceptionThrown:
			d := e.ExceptionDetails
			msg := d.Text
			if d.Exception != nil {
				msg += " " + d.Exception.Description
			}
			br.report("uncaught exception: " + msg)
		case *runtime.EventConsoleAPICalled:
			if e.Type == runtime.ConsoleAPICalledTypeError {
				var parts []string
				for _, a := range e.Args {
					parts = append(parts, strings.TrimSpace(string(a.Value)+" "+a.Description))
				}
				br.report("console.error: " + strings.Join(parts, " "))
			}
		case *log.EventEntryAdded:
			// Network errors (a 404 the page expects and answers) are
			// left out; anything else at error level is a problem: a
			// script or style blocked by the Content-Security-Policy, ...
			if e.Entry.Level == log.EntryLevelError && e.Entry.Source != log.EntrySourceNetwork {
				br.report(fmt.Sprintf("%s: %s%s", e.Entry.Source, e.Entry.Text, where(e.Entry)))
			}
		}
	}))
	t.Cleanup(func() {
		cancel()
		cancelAlloc()
	})
	br.ctx = ctx
	if err := chromedp.Do(ctx, chromedp.Navigate("about:blank")); err != nil {
		t.Fatalf("start Chromium %s: %v", exe, err)
	}
	return br
}

// where says where a logged problem came from (the script and line, and
// the stack when Chromium gives one), so a report such as a
// Content-Security-Policy violation names the code that caused it.
func where(e *log.Entry) string {
	var parts []string
	if e.URL != "" {
		parts = append(parts, fmt.Sprintf("%s:%d", e.URL, e.LineNumber))
	}
	if e.StackTrace != nil {
		for _, f := range e.StackTrace.CallFrames {
			parts = append(parts, fmt.Sprintf("%s (%s:%d:%d)", f.FunctionName, f.URL, f.LineNumber, f.ColumnNumber))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return " [at " + strings.Join(parts, " <- ") + "]"
}

// take removes the first problem reported that contains s, and says
// whether there was one.
func (br *browser) take(s string) bool {
	br.mu.Lock()
	defer br.mu.Unlock()
	for i, p := range br.problems {
		if strings.Contains(p, s) {
			br.problems = slices.Delete(br.problems, i, i+1)
			return true
		}
	}
	return false
}

func (br *browser) report(s string) {
	br.mu.Lock()
	defer br.mu.Unlock()
	br.problems = append(br.problems, s)
}

// run runs actions, failing the test on error.
func (br *browser) run(t *testing.T, what string, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(br.ctx, 45*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		br.screenshot(t, "failed-"+strings.ReplaceAll(what, " ", "-"))
		t.Fatalf("%s: %v", what, err)
	}
}

// waitJS polls until the JavaScript expression is true (across a page
// load: a poll whose page went away starts again on the new one).
func (br *browser) waitJS(t *testing.T, what, expr string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(br.ctx, 45*time.Second)
		_, err := chromedp.Run(ctx, chromedp.Poll[any](expr, chromedp.WithPollingTimeout(time.Until(deadline)), chromedp.WithPollingInterval(50*time.Millisecond)))
		cancel()
		if err == nil {
			return
		}
		if strings.Contains(err.Error(), "Cannot find context") && time.Now().Before(deadline) {
			continue
		}
		br.screenshot(t, "failed-"+strings.ReplaceAll(what, " ", "-"))
		t.Fatalf("waiting for %s (%s): %v", what, expr, err)
	}
}

// eval evaluates expr in the page and returns its value.
func eval[T any](t *testing.T, br *browser, expr string) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(br.ctx, 45*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		t.Fatalf("evaluate %s: %v", expr, err)
	}
	return v
}

// goTo loads the dashboard afresh at a route (a hash) and waits for its
// heading. (Each load has its own query string, so it is a real page load
// and not a jump within the page.)
func (br *browser) goTo(t *testing.T, base, hash, heading string) {
	t.Helper()
	br.loads++
	br.run(t, "open "+hash, chromedp.Navigate(fmt.Sprintf("%s/?load=%d%s", base, br.loads, hash)))
	br.waitJS(t, "heading of "+hash, fmt.Sprintf(`(() => { const h = document.querySelector('main h1'); return !!h && h.textContent.includes(%q) })()`, heading))
}

// screenshot saves the viewport as name.png.
func (br *browser) screenshot(t *testing.T, name string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(br.ctx, 20*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Errorf("screenshot %s: %v", name, err)
		return
	}
	if err := os.WriteFile(filepath.Join(br.shots, name+".png"), png, 0o644); err != nil {
		t.Errorf("screenshot %s: %v", name, err)
	}
}

// a11yCheck is evaluated on every page: every form control has a label,
// the page has one h1 and a language, and the text of every visible
// element (and of the graph's nodes) has a contrast ratio of at least
// 4.5:1 against its background (3:1 for large text).
const a11yCheck = `(() => {
  const out = [];
  if (!document.documentElement.lang) out.push('no lang on html');
  if (document.querySelectorAll('main h1').length !== 1) out.push('main has ' + document.querySelectorAll('main h1').length + ' h1');
  for (const el of document.querySelectorAll('input, select, textarea')) {
    if (el.type === 'hidden') continue;
    const named = (el.labels && el.labels.length) || el.getAttribute('aria-label') || el.getAttribute('aria-labelledby');
    if (!named) out.push('unlabelled ' + el.outerHTML.slice(0, 80));
  }
  const parse = (c) => { const m = c.match(/rgba?\(([^)]+)\)/); if (!m) return null; const p = m[1].split(/[ ,\/]+/).filter(Boolean).map(Number); return [p[0], p[1], p[2], p.length > 3 ? p[3] : 1]; };
  const lum = ([r, g, b]) => { const f = (v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); }; return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b); };
  const ratio = (a, b) => { const x = lum(a), y = lum(b); return (Math.max(x, y) + 0.05) / (Math.min(x, y) + 0.05); };
  const over = (top, under) => { const a = top[3]; return [top[0] * a + under[0] * (1 - a), top[1] * a + under[1] * (1 - a), top[2] * a + under[2] * (1 - a), 1]; };
  const bgOf = (el) => { const layers = []; for (let e = el; e && e.nodeType === 1; e = e.parentElement) { const c = parse(getComputedStyle(e).backgroundColor); if (c && c[3] > 0) { layers.push(c); if (c[3] >= 1) break; } } let bg = [255, 255, 255, 1]; for (let i = layers.length - 1; i >= 0; i--) bg = over(layers[i], bg); return bg; };
  const sel = 'main p, main td, main th, main a, main label, main button, main h1, main h2, main h3, main dt, main dd, main summary, main li, main .badge, main span, header a, header .live-badge, main pre';
  for (const el of document.querySelectorAll(sel)) {
    if (!el.offsetParent && getComputedStyle(el).position !== 'fixed') continue;
    const own = [...el.childNodes].some((n) => n.nodeType === 3 && n.textContent.trim());
    if (!own) continue;
    const cs = getComputedStyle(el);
    if (cs.visibility === 'hidden' || Number(cs.opacity) === 0) continue;
    const fg = parse(cs.color);
    if (!fg) continue;
    const bg = bgOf(el);
    const r = ratio(over(fg, bg), bg);
    const size = parseFloat(cs.fontSize), bold = Number(cs.fontWeight) >= 700;
    const need = size >= 24 || (bold && size >= 18.66) ? 3 : 4.5;
    if (el.closest('button:disabled')) continue;
    if (r < need) out.push('contrast ' + r.toFixed(2) + ' < ' + need + ': ' + el.tagName + '.' + el.className + ' "' + el.textContent.trim().slice(0, 40) + '"');
  }
  for (const g of document.querySelectorAll('svg.dag g.node')) {
    const fill = parse(getComputedStyle(g.querySelector('rect')).fill);
    const text = parse(getComputedStyle(g.querySelector('text')).fill);
    if (fill && text && ratio(text, fill) < 4.5) out.push('node ' + g.dataset.id + ' text contrast ' + ratio(text, fill).toFixed(2));
  }
  return out;
})()`

// checkPage runs the accessibility checks and saves a screenshot.
func (br *browser) checkPage(t *testing.T, name string) {
	t.Helper()
	for _, p := range eval[[]string](t, br, a11yCheck) {
		t.Errorf("%s: %s", name, p)
	}
	eval[any](t, br, `window.scrollTo(0, 0)`)
	br.screenshot(t, name)
}

const planVine = `vine 1.2.0
title: Ship the release
---
[release] Ship the release (notstarted)
Everything below first.
-> build
-> docs
-> review
-> perf
---
[build] Build binaries (complete)
> Use Go 1.26.
-> deps
---
[deps] Pin dependencies (complete)
---
[docs] Write the docs (started)
-> outline
---
[outline] Outline the docs (reviewing)
---
[review] Review the changes (notstarted)
-> build
---
[perf] Measure performance (notstarted)
-> fix
---
[fix] Fix the flaky test (blocked)
> The CI runner is down.
`

// bigVine is a 621-node graph: a root, 20 areas of 30 tasks each.
func bigVine() string {
	var b strings.Builder
	b.WriteString("vine 1.2.0\ntitle: A large plan\n---\n[root] Everything (notstarted)\n")
	for a := range 20 {
		fmt.Fprintf(&b, "-> area%d\n", a)
	}
	for a := range 20 {
		fmt.Fprintf(&b, "---\n[area%d] Area %d (notstarted)\n", a, a)
		for i := range 30 {
			fmt.Fprintf(&b, "-> t%d-%d\n", a, i)
		}
	}
	for a := range 20 {
		for i := range 30 {
			status := "notstarted"
			if i%3 == 0 {
				status = "complete"
			}
			fmt.Fprintf(&b, "---\n[t%d-%d] Task %d of area %d (%s)\n", a, i, i, a, status)
		}
	}
	return b.String()
}

// TestDashboardInBrowser drives every page of the dashboard in headless
// Chromium against `trellis serve`: tasks added through the API appear
// live without a reload, a dead letter is retried by clicking (one, then
// all of a queue), the VINE graph is drawn with the right node count,
// status colours and frontier, a large graph opens collapsed and search
// reveals a node, a code search shows citations, the event tail is live
// and "as of" shows the board as it was; checkpoints from the log are
// rendered inert; every page passes label and contrast checks, works on a
// phone-sized screen, and logs no error (a Content-Security-Policy
// violation included).
func TestDashboardInBrowser(t *testing.T) {
	exe := findChromium(t)
	bin := buildTrellis(t)
	srv := startServe(t, bin, nil)
	br := startBrowser(t, exe)
	t.Logf("screenshots in %s", br.shots)

	// Seed the log through the API.
	dead := srv.deadLetter(t, "jobs", "Import the archive")
	for i := range 3 {
		srv.add(t, "jobs", fmt.Sprintf("Process batch %d", i+1), 3)
	}
	held := srv.next(t, "jobs", "w-1")
	finished := srv.next(t, "jobs", "w-1")
	srv.call(t, http.MethodPost, "/v1/queue/tasks/"+finished.TaskID+"/done", map[string]any{"worker": "w-1",
		"what_was_done": "Fixed the **null** check <img src=x onerror=\"window.__xss=1\"> <script>window.__xss=2</script> [link](javascript:window.__xss=3)",
		"what_changed":  []string{"payment.py"}, "citations": []string{"chunk_0123456789abcdef"}}, nil)
	if err := os.WriteFile(filepath.Join(srv.ws, "plan.vine"), []byte(planVine), 0o644); err != nil {
		t.Fatal(err)
	}
	var graph struct {
		GraphID string `json:"graph_id"`
	}
	srv.call(t, http.MethodPost, "/v1/vine/import", map[string]any{"file": "plan.vine"}, &graph)
	srv.call(t, http.MethodPost, "/tasks", map[string]any{"name": "fix-auth", "description": "Fix auth", "objectives": []string{"Fix middleware", "Add tests"}}, nil)
	srv.call(t, http.MethodPost, "/tasks/fix-auth/join", map[string]any{"agent_id": "agent_1", "role": "implementer"}, nil)
	for _, text := range []string{"Use JWT middleware for every route", "The auth bug was a missing null check in the token parser"} {
		srv.call(t, http.MethodPost, "/v1/memory/observations", map[string]any{"task": "fix-auth", "agent_id": "agent_1", "session": "s1", "type": "decision", "text": text}, nil)
	}
	srv.call(t, http.MethodPost, "/tasks/fix-auth/consolidate", map[string]any{"level": "session", "session": "s1", "agent_id": "agent_1"}, nil)
	repo := filepath.Join(srv.ws, "repo")
	if err := os.MkdirAll(repo, 0o755); err != nil {
		t.Fatal(err)
	}
	src := "package ledger\n\n// Reconcile matches every payment with its invoice and reports the ones left over.\nfunc Reconcile(payments, invoices []string) []string {\n\treturn nil\n}\n"
	if err := os.WriteFile(filepath.Join(repo, "ledger.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(srv.bin, "ingest", repo, "--data", srv.data).CombinedOutput(); err != nil {
		t.Fatalf("ingest: %v\n%s", err, out)
	}

	base := srv.url
	t.Run("the page checks catch problems", func(t *testing.T) {
		br.goTo(t, base, "#/", "Overview")
		eval[any](t, br, `(() => { const m = document.querySelector('main');
			m.insertAdjacentHTML('beforeend', '<p id="bad-contrast">faint text</p><input id="bad-input"><h1 id="bad-h1">second</h1>');
			document.getElementById('bad-contrast').style.color = '#bbb'; })()`)
		got := eval[[]string](t, br, a11yCheck)
		eval[any](t, br, `['bad-contrast', 'bad-input', 'bad-h1'].forEach(id => document.getElementById(id).remove())`)
		want := []string{"main has 2 h1", "unlabelled <input", "contrast 1.84 < 4.5"}
		if len(got) != len(want) {
			t.Fatalf("checks on a bad page found %q; want %d problems like %q", got, len(want), want)
		}
		for i, w := range want {
			if !strings.HasPrefix(got[i], w) {
				t.Errorf("problem %d is %q, want %q...", i, got[i], w)
			}
		}
		// An inline style attribute, as injected HTML would carry, is
		// blocked by the Content-Security-Policy and reported.
		eval[any](t, br, `document.querySelector('main').insertAdjacentHTML('beforeend', '<p id="csp-probe" style="color: red">probe</p>')`)
		deadline := time.Now().Add(10 * time.Second)
		for !br.take("Content Security Policy") {
			if time.Now().After(deadline) {
				t.Fatal("an inline style was not reported as a Content-Security-Policy violation")
			}
			time.Sleep(20 * time.Millisecond)
		}
		if colour := eval[string](t, br, `getComputedStyle(document.getElementById('csp-probe')).color`); colour == "rgb(255, 0, 0)" {
			t.Fatal("the inline style was applied")
		}
	})

	t.Run("overview is live", func(t *testing.T) {
		br.goTo(t, base, "#/", "Overview")
		br.waitJS(t, "jobs counts", `document.querySelector('[data-queue="jobs"] [data-count="queued"]')?.textContent === '1'`)
		br.waitJS(t, "dead letters", `document.querySelector('[data-queue="jobs"] [data-count="dead"]')?.textContent === '1'`)
		br.waitJS(t, "live badge", `document.querySelector('[data-live]')?.dataset.live === 'live'`)
		eval[any](t, br, `window.__noReload = 'still here'`)
		srv.add(t, "jobs", "Added while watching", 3)
		srv.add(t, "fresh", "A new queue", 3)
		br.waitJS(t, "counts updated live", `document.querySelector('[data-queue="jobs"] [data-count="queued"]')?.textContent === '2' && !!document.querySelector('[data-queue="fresh"]')`)
		if marker := eval[string](t, br, `window.__noReload`); marker != "still here" {
			t.Fatalf("the page was reloaded (marker %q)", marker)
		}
		srv.call(t, http.MethodPost, "/v1/queues/jobs/controls", map[string]any{"action": "pause", "reason": "deploy"}, nil)
		br.waitJS(t, "paused live", `!!document.querySelector('[data-queue="jobs"] [data-state="paused"]')`)
		srv.call(t, http.MethodPost, "/v1/queues/jobs/controls", map[string]any{"action": "resume"}, nil)
		br.waitJS(t, "resumed live", `!!document.querySelector('[data-queue="jobs"] [data-state="running"]')`)
		if charts := eval[int](t, br, `document.querySelectorAll('[data-queue="jobs"] .uplot').length`); charts != 2 {
			t.Errorf("jobs has %d charts, want 2 (throughput, latency)", charts)
		}
		br.checkPage(t, "overview")
	})

	t.Run("tasks appear live", func(t *testing.T) {
		br.goTo(t, base, "#/tasks?queue=jobs", "Tasks")
		br.waitJS(t, "rows", `document.querySelectorAll('tr[data-task]').length === 5`)
		eval[any](t, br, `window.__noReload = 'tasks'`)
		live := srv.add(t, "jobs", "Appears without a reload", 3)
		br.waitJS(t, "new row", fmt.Sprintf(`!!document.querySelector('tr[data-task=%q]')`, live.TaskID))
		if marker := eval[string](t, br, `window.__noReload`); marker != "tasks" {
			t.Fatalf("the page was reloaded")
		}
		// The text filter.
		br.run(t, "filter by text", chromedp.SetValue(chromedp.CSS(`input[name=text]`), "without a reload"), chromedp.Click(chromedp.CSS(`form[aria-label="Filter tasks"] button[type=submit]`)))
		br.waitJS(t, "filtered", fmt.Sprintf(`document.querySelectorAll('tr[data-task]').length === 1 && !!document.querySelector('tr[data-task=%q]')`, live.TaskID))
		br.goTo(t, base, "#/tasks?queue=jobs", "Tasks")
		br.waitJS(t, "rows", `document.querySelectorAll('tr[data-task]').length === 6`)
		br.checkPage(t, "tasks")
	})

	t.Run("checkpoint from the log is rendered inert", func(t *testing.T) {
		br.goTo(t, base, "#/tasks/"+finished.TaskID, "Task")
		br.waitJS(t, "checkpoint", `document.querySelector('.markdown')?.textContent.includes('What Was Done')`)
		br.waitJS(t, "timeline", `document.querySelectorAll('.timeline li').length === 3`)
		type rendering struct {
			XSS      any  `json:"xss"`
			Dangers  int  `json:"dangers"`
			Bold     bool `json:"bold"`
			JSLinks  int  `json:"jsLinks"`
			Expanded bool `json:"expanded"`
		}
		br.run(t, "expand an event", chromedp.Click(chromedp.CSS(`.timeline li[data-type="completed"] summary`)))
		// Raw HTML in a checkpoint is shown as text: it never becomes an
		// element, not even in a document the sanitizer parses (where an
		// inline handler would still be reported by the page's CSP).
		if text := eval[string](t, br, `document.querySelector('.markdown').textContent`); !strings.Contains(text, `<img src=x onerror="window.__xss=1">`) || !strings.Contains(text, "<script>") {
			t.Errorf("the checkpoint's raw HTML is not shown as text: %q", text)
		}
		r := eval[rendering](t, br, `({xss: window.__xss ?? null, dangers: document.querySelectorAll('.markdown img, .markdown script, .markdown [onerror]').length,
			bold: !!document.querySelector('.markdown strong'), jsLinks: document.querySelectorAll('.markdown a[href^="javascript"]').length,
			expanded: document.querySelector('.timeline li[data-type="completed"] details').open && document.querySelector('.timeline li[data-type="completed"] .payload').textContent.includes('what_was_done')})`)
		if r.XSS != nil || r.Dangers != 0 || r.JSLinks != 0 || !r.Bold || !r.Expanded {
			t.Fatalf("checkpoint rendering: %+v (want no script effect, no img/script/handlers, no javascript: link, Markdown bold kept, payload expanded)", r)
		}
		// The checkpoint's fields are one per line, not run together.
		text := eval[string](t, br, `document.querySelector('.markdown').innerText`)
		for _, field := range []string{"Created:", "Status:", "Worker:", "Usage:"} {
			if !regexp.MustCompile(`(?m)^` + field + ` \S`).MatchString(text) {
				t.Errorf("checkpoint field %s does not start a line:\n%s", field, text)
			}
		}
		br.checkPage(t, "task")
	})

	t.Run("dead letter retried by clicking", func(t *testing.T) {
		br.goTo(t, base, "#/tasks/"+dead.TaskID, "Task")
		br.waitJS(t, "dead badge", `document.querySelector('main h1 .badge')?.textContent === 'dead'`)
		br.run(t, "click retry", chromedp.Click(chromedp.CSS(`button[data-action=retry]`)))
		br.waitJS(t, "confirmation", `document.querySelector('dialog.confirm')?.open === true`)
		br.screenshot(t, "retry-confirm")
		br.run(t, "confirm", chromedp.Click(chromedp.CSS(`dialog.confirm button.primary`)))
		br.waitJS(t, "queued again", `document.querySelector('main h1 .badge')?.textContent === 'queued' && !!document.querySelector('.timeline li[data-type="requeued"]')`)
		var got task
		srv.call(t, http.MethodGet, "/v1/queue/tasks/"+dead.TaskID, nil, &got)
		if got.Status != "queued" {
			t.Fatalf("after the click the task is %s", got.Status)
		}
		var audit struct {
			Events []struct{ Type, Actor string } `json:"events"`
		}
		srv.call(t, http.MethodGet, "/v1/audit/"+dead.TaskID, nil, &audit)
		if last := audit.Events[len(audit.Events)-1]; last.Type != "requeued" || last.Actor != "operator" {
			t.Fatalf("last event %+v, want requeued by operator (the caller: no actor sent)", last)
		}

		// Cancel a queued task by clicking.
		doomed := srv.add(t, "cancels", "Never needed", 3)
		br.goTo(t, base, "#/tasks/"+doomed.TaskID, "Task")
		br.run(t, "click cancel", chromedp.Click(chromedp.CSS(`button[data-action=cancel]`)))
		br.waitJS(t, "cancel confirmation", `document.querySelector('dialog.confirm')?.open === true && document.querySelector('dialog.confirm').textContent.includes('never run')`)
		br.run(t, "confirm cancel", chromedp.Click(chromedp.CSS(`dialog.confirm button.primary`)))
		br.waitJS(t, "cancelled", `document.querySelector('main h1 .badge')?.textContent === 'cancelled' && !document.querySelector('button[data-action=cancel]')`)
		srv.call(t, http.MethodGet, "/v1/queue/tasks/"+doomed.TaskID, nil, &got)
		if got.Status != "cancelled" {
			t.Fatalf("after the click the task is %s", got.Status)
		}
		br.checkPage(t, "task-cancelled")

		// Bulk: every dead letter of a queue, after one confirmation.
		var ids []string
		for i := range 3 {
			ids = append(ids, srv.deadLetter(t, "bulk", fmt.Sprintf("Bulk %d", i)).TaskID)
		}
		br.goTo(t, base, "#/tasks?queue=bulk&status=dead", "Tasks")
		br.waitJS(t, "dead rows", `document.querySelectorAll('tr[data-status="dead"]').length === 3`)
		br.run(t, "retry all", chromedp.Click(chromedp.Search(`//button[contains(., "Retry all dead letters in bulk")]`)))
		br.waitJS(t, "confirmation", `document.querySelector('dialog.confirm')?.open === true && document.querySelector('dialog.confirm').textContent.includes('all 3 dead tasks of queue bulk')`)
		br.run(t, "confirm", chromedp.Click(chromedp.CSS(`dialog.confirm button.primary`)))
		br.waitJS(t, "no dead row left", `document.querySelectorAll('tr[data-task]').length === 0 && !document.querySelector('button[data-action=retry-all-dead]')`)
		for _, id := range ids {
			var got task
			srv.call(t, http.MethodGet, "/v1/queue/tasks/"+id, nil, &got)
			if got.Status != "queued" {
				t.Errorf("bulk-retried task %s is %s", id, got.Status)
			}
		}
	})

	t.Run("workers", func(t *testing.T) {
		br.goTo(t, base, "#/workers", "Workers")
		br.waitJS(t, "holder", fmt.Sprintf(`!!document.querySelector('tr[data-worker="w-1"] [data-held=%q]')`, held.TaskID))
		br.waitJS(t, "w-2 row", `document.querySelector('tr[data-worker="w-2"]')?.textContent.includes('dead')`)
		br.checkPage(t, "workers")
	})

	t.Run("graph", func(t *testing.T) {
		var view struct {
			Nodes []struct {
				ID     string `json:"id"`
				Status string `json:"status"`
			} `json:"nodes"`
			Frontier map[string][]string `json:"frontier"`
		}
		srv.call(t, http.MethodGet, "/v1/vine/graphs/"+graph.GraphID, nil, &view)
		br.goTo(t, base, "#/graphs", "VINE graphs")
		br.waitJS(t, "graph link", fmt.Sprintf(`!!document.querySelector('a[href="#/graphs/%s"]')`, graph.GraphID))
		br.goTo(t, base, "#/graphs/"+graph.GraphID, "Ship the release")
		br.waitJS(t, "nodes drawn", `document.querySelectorAll('svg.dag g.node').length === 8`)
		type node struct {
			ID, Status, Frontier, Fill, Stroke string
		}
		drawn := eval[[]node](t, br, `[...document.querySelectorAll('svg.dag g.node')].map(g => ({ID: g.dataset.id, Status: g.dataset.status, Frontier: g.dataset.frontier,
			Fill: g.querySelector('rect').getAttribute('fill'), Stroke: g.querySelector('rect').getAttribute('stroke')}))`)
		colours := map[string]string{"notstarted": "#e5e7eb", "planning": "#c7d2fe", "started": "#7dd3fc", "reviewing": "#fde68a", "complete": "#86efac", "blocked": "#fca5a5"}
		frontierColours := map[string]string{"ready_to_start": "#047857", "ready_to_complete": "#b45309", "blocked": "#b91c1c", "needs_expansion": "#6d28d9"}
		frontierOf := map[string]string{}
		for cls, ids := range view.Frontier {
			for _, id := range ids {
				frontierOf[id] = cls
			}
		}
		if len(frontierOf) == 0 {
			t.Fatalf("the test graph has no frontier: %+v", view.Frontier)
		}
		statusOf := map[string]string{}
		for _, n := range view.Nodes {
			statusOf[n.ID] = n.Status
		}
		for _, d := range drawn {
			if d.Status != statusOf[d.ID] || d.Fill != colours[d.Status] {
				t.Errorf("node %s drawn %s in %s; the log says %s (%s)", d.ID, d.Status, d.Fill, statusOf[d.ID], colours[statusOf[d.ID]])
			}
			if d.Frontier != frontierOf[d.ID] || (d.Frontier != "" && d.Stroke != frontierColours[d.Frontier]) {
				t.Errorf("node %s frontier %q outlined %s; the log says %q", d.ID, d.Frontier, d.Stroke, frontierOf[d.ID])
			}
		}
		// Keyboard: a node is a button; Enter opens its details and history.
		br.run(t, "focus a node", chromedp.Focus(chromedp.CSS(`svg.dag g.node[data-id="build"]`)), chromedp.KeyEvent("\r"))
		br.waitJS(t, "node details", `document.querySelector('#node-title')?.textContent === 'build' && document.querySelector('.node-panel')?.textContent.includes('Use Go 1.26.') && document.querySelectorAll('.node-panel .timeline li').length >= 1`)
		// Search by id.
		br.run(t, "search", chromedp.SetValue(chromedp.CSS(`form[aria-label="Find a node"] input`), "outline"), chromedp.Click(chromedp.CSS(`form[aria-label="Find a node"] button[type=submit]`)))
		br.waitJS(t, "found", `document.querySelector('svg.dag g.node.selected')?.dataset.id === 'outline'`)
		// Live: a status change in the log recolours the node.
		srv.call(t, http.MethodPost, "/v1/vine/write", map[string]any{"file": "plan.vine", "agent": "agent-7",
			"operations": []map[string]any{{"op": "set_status", "id": "fix", "status": "complete"}}}, nil)
		br.waitJS(t, "recoloured live", `(() => { const g = document.querySelector('svg.dag g.node[data-id="fix"]'); return g && g.dataset.status === 'complete' && g.querySelector('rect').getAttribute('fill') === '#86efac' })()`)
		br.run(t, "collapse all", chromedp.Click(chromedp.Search(`//button[contains(., "Collapse all")]`)))
		br.waitJS(t, "collapsed", `document.querySelectorAll('svg.dag g.node').length === 1 && document.querySelector('svg.dag g.node .node-hidden').textContent === '+7'`)
		br.run(t, "expand all", chromedp.Click(chromedp.Search(`//button[contains(., "Expand all")]`)))
		br.waitJS(t, "expanded", `document.querySelectorAll('svg.dag g.node').length === 8`)
		br.run(t, "select docs", chromedp.Click(chromedp.CSS(`svg.dag g.node[data-id="docs"]`)))
		br.waitJS(t, "docs details", `document.querySelector('#node-title')?.textContent === 'docs'`)
		br.checkPage(t, "graph")
	})

	t.Run("large graph opens collapsed", func(t *testing.T) {
		if err := os.WriteFile(filepath.Join(srv.ws, "big.vine"), []byte(bigVine()), 0o644); err != nil {
			t.Fatal(err)
		}
		var big struct {
			GraphID string `json:"graph_id"`
		}
		srv.call(t, http.MethodPost, "/v1/vine/import", map[string]any{"file": "big.vine"}, &big)
		br.goTo(t, base, "#/graphs/"+big.GraphID, "A large plan")
		br.waitJS(t, "drawn collapsed", `document.querySelectorAll('svg.dag g.node').length === 21 && document.querySelector('main').textContent.includes('21 of 621 nodes drawn')`)
		br.run(t, "search a hidden node", chromedp.SetValue(chromedp.CSS(`form[aria-label="Find a node"] input`), "t13-29"), chromedp.Click(chromedp.CSS(`form[aria-label="Find a node"] button[type=submit]`)))
		br.waitJS(t, "revealed", `document.querySelector('svg.dag g.node.selected')?.dataset.id === 't13-29' && document.querySelectorAll('svg.dag g.node').length === 51`)
		br.screenshot(t, "graph-large")
	})

	t.Run("memory", func(t *testing.T) {
		br.goTo(t, base, "#/memory", "Agent memory")
		br.waitJS(t, "task card", `!!document.querySelector('[data-agent-task="fix-auth"]')`)
		br.waitJS(t, "facts", `document.querySelectorAll('tr[data-fact]').length === 2 && !!document.querySelector('[data-branch="task/fix-auth/agent_1"]')`)
		srv.call(t, http.MethodPatch, "/tasks/fix-auth/objectives/obj-1", map[string]any{"status": "active", "agent_id": "agent_1"}, nil)
		br.waitJS(t, "objective live", `document.querySelector('[data-agent-task="fix-auth"]').textContent.includes('active')`)
		br.checkPage(t, "memory")
	})

	t.Run("code search", func(t *testing.T) {
		br.goTo(t, base, "#/search", "Code search")
		br.run(t, "search", chromedp.SetValue(chromedp.CSS(`input[name=q]`), "reconcile payments with invoices"), chromedp.Focus(chromedp.CSS(`input[name=q]`)), chromedp.KeyEvent("\r"))
		br.waitJS(t, "results", `document.querySelectorAll('ol.citations li').length >= 1`)
		first := eval[string](t, br, `document.querySelector('pre.citation').textContent`)
		for _, want := range []string{"[1] CHUNK_ID: chunk_", "Source: ledger.go (lines", "Type: function (Reconcile)"} {
			if !strings.Contains(first, want) {
				t.Errorf("first result lacks %q:\n%s", want, first)
			}
		}
		// A snippet of several lines keeps the citation's indentation on
		// each (as the CLI prints it), not only on its first.
		_, snip, _ := strings.Cut(first, "    Snippet: ")
		lines := strings.Split(strings.TrimRight(snip, "\n"), "\n")
		if len(lines) < 2 {
			t.Fatalf("the snippet has one line; the test needs several:\n%s", first)
		}
		for _, l := range lines[1:] {
			if !strings.HasPrefix(l, "        ") || strings.TrimSpace(l) == "" {
				t.Errorf("snippet line %q is not indented under the first:\n%s", l, first)
			}
		}
		br.checkPage(t, "search")
		br.run(t, "open the chunk", chromedp.Click(chromedp.CSS(`pre.citation a`)))
		br.waitJS(t, "chunk source", `document.querySelector('pre.source')?.textContent.includes('func Reconcile(payments, invoices []string)')`)
		br.checkPage(t, "chunk")
	})

	t.Run("events tail and as of", func(t *testing.T) {
		br.goTo(t, base, "#/events", "Events")
		br.waitJS(t, "tail live", `document.querySelector('[data-testid="tail-state"]')?.textContent === 'live'`)
		before := time.Now().UTC()
		late := srv.add(t, "late", "Added after the moment", 3)
		br.waitJS(t, "event tailed", fmt.Sprintf(`[...document.querySelectorAll('ol.tail li[data-type="added"]')].some(li => li.textContent.includes(%q))`, late.TaskID))
		br.run(t, "expand it", chromedp.Click(chromedp.CSS(`ol.tail li[data-type="added"] summary`)))
		br.waitJS(t, "payload", `document.querySelector('ol.tail li[data-type="added"] details[open] .payload')?.textContent.includes('Added after the moment')`)
		// As of a moment before the late add: queue late had nothing then.
		br.run(t, "as of", chromedp.SetValue(chromedp.CSS(`input[name=at]`), before.Format("2006-01-02T15:04:05")),
			chromedp.Click(chromedp.Search(`//button[contains(., "Show the board then")]`)))
		br.waitJS(t, "as-of table", `document.querySelector('tr[data-queue="late"] td[data-then="queued"]')?.textContent === '0 → 1' && document.querySelector('tr[data-queue="jobs"]') !== null`)
		br.checkPage(t, "events")
		// A type filter: only dead letters.
		br.goTo(t, base, "#/events?type=dead", "Events")
		br.waitJS(t, "filtered tail", `(() => { const l = [...document.querySelectorAll('ol.tail li')]; return l.length === 4 && l.every(li => li.dataset.type === 'dead') })()`)
	})

	t.Run("phone", func(t *testing.T) {
		br.run(t, "phone screen", chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(2), chromedp.EmulateMobile))
		for _, p := range []struct{ hash, heading, name string }{
			{"#/", "Overview", "overview-phone"},
			{"#/tasks", "Tasks", "tasks-phone"},
			{"#/graphs/" + graph.GraphID, "Ship the release", "graph-phone"},
		} {
			br.goTo(t, base, p.hash, p.heading)
			br.waitJS(t, "content", `document.querySelectorAll('main .card, main table, main svg').length > 0`)
			if overflow := eval[int](t, br, `document.documentElement.scrollWidth - window.innerWidth`); overflow > 1 {
				t.Errorf("%s: the page is %d px wider than a phone screen", p.hash, overflow)
			}
			br.screenshot(t, p.name)

		}
		br.run(t, "laptop screen", chromedp.EmulateViewport(1280, 900))
	})

	t.Run("keyboard", func(t *testing.T) {
		br.goTo(t, base, "#/", "Overview")
		br.run(t, "tab", chromedp.KeyEvent("\t"))
		first := eval[string](t, br, `document.activeElement.textContent.trim()`)
		br.run(t, "tab", chromedp.KeyEvent("\t"))
		second := eval[string](t, br, `document.activeElement.textContent.trim()`)
		if first != "Skip to content" || second != "Trellis" {
			t.Errorf("tab order starts %q, %q; want the skip link, then the brand", first, second)
		}
	})

	t.Run("with tokens", func(t *testing.T) {
		// serve --auth: the page and its assets load without a token; the
		// API answers the page's first call 401, the page asks for a
		// token, and with it every call (the live feed included) works.
		token := "trellis_dashboard-test-admin-token-0123456789abcdef"
		secure := startServe(t, bin, []string{"TRELLIS_ADMIN_TOKEN=" + token}, "--auth")
		res, err := http.Get(secure.url + "/v1/queue/tasks")
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusUnauthorized {
			t.Fatalf("GET /v1/queue/tasks without a token: %d, want 401", res.StatusCode)
		}
		br.run(t, "open", chromedp.Navigate(secure.url+"/#/"))
		br.waitJS(t, "token asked for", `document.querySelector('dialog[aria-labelledby="token-title"]')?.open === true`)
		br.screenshot(t, "token")
		br.run(t, "give the token", chromedp.SetValue(chromedp.CSS(`input[name=token]`), token),
			chromedp.Click(chromedp.CSS(`dialog[aria-labelledby="token-title"] button[type=submit]`)))
		br.waitJS(t, "overview with the token", `document.querySelector('main h1')?.textContent === 'Overview' && document.querySelector('[data-live]')?.dataset.live === 'live' && !document.querySelector('dialog[open]')`)
		var added task
		req, _ := http.NewRequest(http.MethodPost, secure.url+"/v1/queue/tasks", strings.NewReader(`{"objective":"seen with a token","queue":"secure"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+token)
		res, err = http.DefaultClient.Do(req)
		if err != nil || res.StatusCode != http.StatusCreated {
			t.Fatalf("add with the token: %v %v", res, err)
		}
		_ = json.NewDecoder(res.Body).Decode(&added)
		res.Body.Close()
		br.waitJS(t, "live with a token", `!!document.querySelector('[data-queue="secure"]')`)
	})

	br.mu.Lock()
	problems := slices.Clone(br.problems)
	br.mu.Unlock()
	for _, p := range problems {
		t.Errorf("the browser reported: %s", p)
	}
}
