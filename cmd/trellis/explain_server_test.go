package main

import (
	"os/exec"
	"strings"
	"testing"
)

// With a server running, `explain --chat-url/--chat-model` (or the
// TRELLIS_CHAT_* environment) would be answered by the server with its own
// models, the flags silently ignored: the command refuses (exit 2) and says
// to give them to `trellis serve`; query does the same for the embedding
// endpoint.
func TestExplainModelFlagsWithARunningServer(t *testing.T) {
	t.Parallel()
	_, url := queueServer(t)
	dir := t.TempDir()
	code, out, errOut := runIn(t, dir, "explain", "--nats-url", url, "--chat-url", "http://127.0.0.1:9/v1", "--chat-model", "m", "how are tasks claimed?")
	if code != 2 || !strings.Contains(errOut, "trellis serve --chat-url") || !strings.Contains(errOut, "would not be used") {
		t.Fatalf("explain with chat flags and a server: exit %d\n%s\n%s", code, out, errOut)
	}
	cmd := exec.Command(trellisBinary(t), "query", "--nats-url", url, "claim")
	cmd.Dir = dir
	cmd.Env = append(cmd.Environ(), "TRELLIS_EMBED_URL=http://127.0.0.1:9/v1", "TRELLIS_EMBED_MODEL=e")
	b, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 || !strings.Contains(string(b), "--embed-url/--embed-model") {
		t.Fatalf("query with TRELLIS_EMBED_* and a server: %v\n%s", err, b)
	}
}
