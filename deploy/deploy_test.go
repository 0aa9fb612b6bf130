// Package deploy_test checks the deployment files as far as this machine
// can without a Docker daemon or a Kubernetes cluster: the image's build
// steps (deploy/build.sh, which the Dockerfile runs) produce a working
// binary, the NATS configurations pass nats-server's own check, and the
// compose file and Kubernetes manifests are well-formed and wired as the
// README says (auth on, secrets, accounts).
package deploy_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// TestImageBuildSteps: the Dockerfile is multi-stage, builds with cgo
// through deploy/build.sh, and that script builds a binary that runs.
func TestImageBuildSteps(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	df, err := os.ReadFile("Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	if n := len(regexp.MustCompile(`(?m)^FROM `).FindAll(df, -1)); n < 2 {
		t.Fatalf("Dockerfile has %d stages; want a builder and a runtime", n)
	}
	for _, want := range []string{"deploy/build.sh", "COPY --from=build", "USER trellis", `"serve", "--auth"`} {
		if !strings.Contains(string(df), want) {
			t.Errorf("Dockerfile lacks %q", want)
		}
	}
	script, _ := os.ReadFile("build.sh")
	if !strings.Contains(string(script), "CGO_ENABLED=1") {
		t.Error("build.sh does not build with cgo (tree-sitter needs it)")
	}
	out := filepath.Join(t.TempDir(), "trellis")
	cmd := exec.Command("sh", "deploy/build.sh", out)
	cmd.Dir = ".."
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("deploy/build.sh: %v\n%s", err, b)
	} else if !strings.HasPrefix(string(b), "trellis ") {
		t.Fatalf("the built binary's version: %s", b)
	}
}

// TestNATSConfigsPassTheServersCheck: nats-server -t accepts every node's
// configuration (with the account passwords set as a Secret would).
func TestNATSConfigsPassTheServersCheck(t *testing.T) {
	if testing.Short() {
		t.Skip("builds nats-server")
	}
	bin := filepath.Join(t.TempDir(), "nats-server")
	if b, err := exec.Command("go", "build", "-o", bin, "github.com/nats-io/nats-server/v2").CombinedOutput(); err != nil {
		t.Fatalf("build nats-server: %v\n%s", err, b)
	}
	confs, _ := filepath.Glob("nats-cluster/n*.conf")
	if len(confs) != 3 {
		t.Fatalf("%d node configs", len(confs))
	}
	for _, c := range confs {
		cmd := exec.Command(bin, "-t", "-c", filepath.Base(c))
		cmd.Dir = "nats-cluster"
		cmd.Env = append(os.Environ(), "TRELLIS_SERVER_PASSWORD=s3cret-server", "TRELLIS_CLIENT_PASSWORD=s3cret-client")
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("%s: %v\n%s", c, err, b)
		}
		body, _ := os.ReadFile(c)
		if !strings.Contains(string(body), "sync_interval: always") {
			t.Errorf("%s does not fsync every write", c)
		}
	}
	acc, _ := os.ReadFile("nats-cluster/accounts.conf")
	for _, want := range []string{`publish: { allow: ["trellis.api.v1.>"] }`, `subscribe: { allow: ["_INBOX.>"] }`} {
		if !strings.Contains(string(acc), want) {
			t.Errorf("the client user's permissions lack %s", want)
		}
	}
}

// yamlDocs decodes every document of a YAML file.
func yamlDocs(t *testing.T, path string) []map[string]any {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	dec := yaml.NewDecoder(f)
	var docs []map[string]any
	for {
		var d map[string]any
		if err := dec.Decode(&d); err != nil {
			if err.Error() == "EOF" {
				return docs
			}
			t.Fatalf("%s: %v", path, err)
		}
		docs = append(docs, d)
	}
}

func get(m any, path ...string) any {
	for _, k := range path {
		mm, ok := m.(map[string]any)
		if !ok {
			return nil
		}
		m = mm[k]
	}
	return m
}

// TestComposeFile: three NATS nodes, two Trellis servers with --auth and
// replicas 3 built from the Dockerfile, a worker with a token; every
// secret comes from the environment.
func TestComposeFile(t *testing.T) {
	t.Parallel()
	docs := yamlDocs(t, "docker-compose.yml")
	services, _ := get(docs[0], "services").(map[string]any)
	for _, n := range []string{"n1", "n2", "n3", "trellis-1", "trellis-2", "worker", "token-init"} {
		if services[n] == nil {
			t.Errorf("no service %s", n)
		}
	}
	for _, n := range []string{"trellis-1", "trellis-2"} {
		cmd := strings.Join(toStrings(get(services[n], "command")), " ")
		if !strings.Contains(cmd, "serve --auth --replicas 3") {
			t.Errorf("%s runs %q", n, cmd)
		}
		if get(services[n], "build", "dockerfile") != "deploy/Dockerfile" {
			t.Errorf("%s is not built from deploy/Dockerfile", n)
		}
		if u, _ := get(services[n], "environment", "TRELLIS_NATS_URL").(string); !strings.Contains(u, "trellis:${TRELLIS_SERVER_PASSWORD}@n1") {
			t.Errorf("%s connects as %q", n, u)
		}
	}
	if f := get(services["worker"], "environment", "TRELLIS_TOKEN_FILE"); f == nil {
		t.Error("the worker has no token")
	}
	if u, _ := get(services["worker"], "environment", "TRELLIS_NATS_URL").(string); !strings.Contains(u, "client:") {
		t.Errorf("the worker connects as %q, want the client user", u)
	}
	raw, _ := os.ReadFile("docker-compose.yml")
	if strings.Contains(string(raw), "trellis:latest") {
		t.Error("compose names an image nothing builds")
	}
}

func toStrings(v any) []string {
	var out []string
	if l, ok := v.([]any); ok {
		for _, x := range l {
			if s, ok := x.(string); ok {
				out = append(out, s)
			}
		}
	}
	return out
}

// TestKubernetesManifests: the Trellis Deployment runs --auth with its
// admin token from a Secret, the worker reads its token from a Secret,
// and the NATS values configure a 3-node JetStream cluster with the
// accounts.
func TestKubernetesManifests(t *testing.T) {
	t.Parallel()
	kinds := map[string]map[string]any{}
	for _, f := range []string{"kubernetes/trellis.yaml", "kubernetes/secrets.example.yaml"} {
		for _, d := range yamlDocs(t, f) {
			if d["apiVersion"] == nil || d["kind"] == nil || get(d, "metadata", "name") == nil {
				t.Fatalf("%s: a document without apiVersion, kind or name: %v", f, d)
			}
			kinds[d["kind"].(string)+"/"+get(d, "metadata", "name").(string)] = d
		}
	}
	for _, want := range []string{"Deployment/trellis", "Service/trellis", "Deployment/trellis-worker", "Secret/trellis-admin", "Secret/trellis-worker-token", "Secret/trellis-nats"} {
		if kinds[want] == nil {
			t.Errorf("no %s", want)
		}
	}
	srv := get(kinds["Deployment/trellis"], "spec", "template", "spec", "containers")
	c0 := srv.([]any)[0]
	if args := strings.Join(toStrings(get(c0, "args")), " "); !strings.Contains(args, "serve --auth") {
		t.Errorf("trellis runs %q", args)
	}
	found := false
	for _, e := range get(c0, "env").([]any) {
		if get(e, "name") == "TRELLIS_ADMIN_TOKEN" && get(e, "valueFrom", "secretKeyRef", "name") == "trellis-admin" {
			found = true
		}
	}
	if !found {
		t.Error("the admin token does not come from the trellis-admin Secret")
	}
	if get(kinds["Deployment/trellis-worker"], "spec", "template", "spec", "volumes").([]any)[0].(map[string]any)["secret"] == nil {
		t.Error("the worker's token is not a Secret volume")
	}
	v := yamlDocs(t, "kubernetes/nats-values.yaml")[0]
	if get(v, "config", "cluster", "replicas") != 3 || get(v, "config", "jetstream", "enabled") != true ||
		get(v, "config", "merge", "jetstream", "sync_interval") != "always" || get(v, "config", "merge", "accounts", "TRELLIS") == nil {
		t.Errorf("NATS values: %v", v)
	}
}
