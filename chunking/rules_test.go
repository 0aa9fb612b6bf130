package chunking

import (
	"strings"
	"testing"
)

func TestExcludedByPath(t *testing.T) {
	r := DefaultRules()
	for _, tc := range []struct {
		path   string
		isDir  bool
		reason string // substring of the reason; "" means not excluded
	}{
		// .env files
		{".env", false, "secret file"},
		{"config/.env.production", false, "secret file"},
		{"prod.env", false, "secret file"},
		// version control and ssh
		{".git", true, "version-control"},
		{".git/config", false, "version-control"},
		{"home/.ssh/id_ed25519", false, ".ssh"},
		{".ssh", true, ".ssh"},
		// key material
		{"certs/server.pem", false, "secret file"},
		{"certs/server.key", false, "secret file"},
		{"keys/id_rsa", false, "secret file"},
		{"keys/id_rsa.pub", false, "secret file"},
		{"store.p12", false, "secret file"},
		{"store.pfx", false, "secret file"},
		{"android/release.keystore", false, "secret file"},
		// credential and secret stores
		{".netrc", false, "secret file"},
		{".npmrc", false, "secret file"},
		{".pypirc", false, "secret file"},
		{"credentials.json", false, "secret file"},
		{".git-credentials", false, "secret file"},
		{".aws/credentials", false, ".aws"},
		{"ops/.docker/config.json", false, "credential store"},
		{".kube/config", false, ".kube"},
		{"infra/terraform.tfstate", false, "secret file"},
		// agent instruction folders and files
		{".claude", true, "agent instruction"},
		{".claude/settings.json", false, "agent instruction"},
		{".cursor/rules/go.mdc", false, "agent instruction"},
		{".codex/config.toml", false, "agent instruction"},
		{".aider.conf.yml", false, "agent instruction"},
		{".aider.tags.cache.v3", true, "agent instruction"},
		{".cursorrules", false, "agent instruction"},
		{".github/agents/reviewer.md", false, "agent instructions"},
		{".github/workflows/ci.yml", false, ""},
		// caches and build output
		{"web/node_modules/react/index.js", false, "node_modules"},
		{"pkg/__pycache__/x.cpython-312.pyc", false, "__pycache__"},
		{".venv/lib/site.py", false, ".venv"},
		{"dist/app.js", false, "dist"},
		{"build", true, "build"},
		{".cache/x", false, ".cache"},
		{"target/debug/app", false, "target"},
		{"vendor/github.com/x/y.go", false, "vendored"},
		{"pkg/mylib.egg-info/PKG-INFO", false, "cache"},
		// secret-named configuration and data files
		{"config/secrets.yaml", false, "secret"},
		{"db_password.txt", false, "password"},
		{"github_token.txt", false, "token"},
		{"api-keys.json", false, "key"},
		{"myApiKey.json", false, "apikey"},
		{"service/credentials.yml", false, "secret file"},
		{"tokens", false, "token"},
		{"private_key.conf", false, "private_key"},
		// source files with those words are read
		{"tokenize.py", false, ""},
		{"lib/secrets.py", false, ""},
		{"ui/keymap.go", false, ""},
		{"auth/password_reset.go", false, ""},
		{"auth/token.ts", false, ""},
		{"crypto/key.rs", false, ""},
		{"docs/secrets.md", false, ""},
		// data files whose names merely contain the letters
		{"tokenizer.json", false, ""},
		{"keymap.json", false, ""},
		{"monkey.txt", false, ""},
		// ordinary files
		{"main.go", false, ""},
		{"README.md", false, ""},
		{".gitignore", false, ""},
		{"AGENTS.md", false, ""},
		{"src/build.rs", false, ""},
		{"internal/builder/b.go", false, ""},
	} {
		got, why := r.Excluded(tc.path, tc.isDir)
		if got != (tc.reason != "") || !strings.Contains(why, tc.reason) {
			t.Errorf("Excluded(%q, %v) = %v %q, want reason containing %q", tc.path, tc.isDir, got, why, tc.reason)
		}
	}
}

func TestExcludedConfigurable(t *testing.T) {
	r := DefaultRules()
	if ex, _ := r.Excluded("vendor/x.go", false); !ex {
		t.Error("vendor not excluded by default")
	}
	r.SkipVendor = false
	if ex, _ := r.Excluded("vendor/x.go", false); ex {
		t.Error("vendor excluded with SkipVendor off")
	}
	r.CacheDirs = append(r.CacheDirs, "generated")
	if ex, _ := r.Excluded("a/generated/x.go", false); !ex {
		t.Error("added cache dir not excluded")
	}
	r.GitIgnore = ParseGitIgnore("", []byte("*.snap\n"))
	if ex, why := r.Excluded("ui/__snapshots__/a.snap", false); !ex || why != "ignored by .gitignore" {
		t.Errorf("gitignored: %v %q", ex, why)
	}
	var empty Rules
	if ex, _ := empty.Excluded(".env", false); ex {
		t.Error("zero Rules exclude")
	}
}

// fake builds test secrets at run time so that the source holds none.
func fake(parts ...string) string { return strings.Join(parts, "") }

func TestSensitiveContent(t *testing.T) {
	r := DefaultRules()
	keyBody := strings.Repeat("MIIEvQIBADANBgkqhkiG9w0BAQEFAASC", 3)
	for _, tc := range []struct {
		path, content string
		reason        string // "" means not sensitive
	}{
		{"certs/server.txt", fake("-----BEGIN RSA ", "PRIVATE KEY-----\n", keyBody, "\n-----END RSA PRIVATE KEY-----\n"), "private key block at line 1"},
		{"k.go", fake("package k\n\nconst k = `\n-----BEGIN OPENSSH ", "PRIVATE KEY-----\n", keyBody, "\n`\n"), "private key block at line 4"},
		{"sa.json", fake(`{"private_key": "-----BEGIN `, `PRIVATE KEY-----\n`, keyBody, `"}`), "private key"},
		{"deploy.sh", fake("export AWS_SECRET_ACCESS_KEY=", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYz3xKq8Ls2J", "\n"), "credential assignment (AWS_SECRET_ACCESS_KEY) at line 1"},
		{"settings.py", fake("DEBUG = True\npassword = \"", "hunter22", "\"\n"), "credential assignment (password) at line 2"},
		{"app.yaml", fake("db:\n  password: ", "s3cr3tPass", "\n"), "credential assignment (password)"},
		{"config.yaml", fake("api_key: sk-", "abc123def456ghi789", "\n"), "API secret key"},
		{"client.ts", fake("const apiKey = '", "AbC123xyz789", "';\n"), "credential assignment (apiKey)"},
		{"main.go", fake("var cfg = Config{Token: \"", "tok3n-value-123", "\"}\n"), "credential assignment (Token)"},
		{"ci.txt", fake("token ", "ghp_", strings.Repeat("a1B2", 9), "\n"), "GitHub token"},
		{"x.py", fake("ID = \"", "AKIA", "Q3EGRTYH4BN5JM6K", "\"\n"), "AWS access key id"},
		// not credentials
		{"crypto.go", "if strings.HasPrefix(s, \"-----BEGIN RSA PRIVATE KEY-----\") {\n", ""},
		{"settings.py", "password = os.environ[\"DB_PASSWORD\"]\n", ""},
		{"settings.py", "password = get_password()\n", ""},
		{"login.py", "if password == \"admin\":\n    pass\n", ""},
		{"form.ts", "const label = { password: \"Enter your password\" };\n", ""},
		{"types.ts", "interface Login { password: string; token: string }\n", ""},
		{"app.yaml", "password: ${DB_PASSWORD}\ntoken: {{ .Values.token }}\n", ""},
		{"ci.yml", "env:\n  GITHUB_TOKEN: ${{ secrets.GITHUB_TOKEN }}\n", ""},
		{"example.env.md", "password: changeme\napi_key: your-api-key-here\nsecret: xxxxxxxx\n", ""},
		{"http.go", "const tokenTypeBearer = \"Bearer\"\nmaxTokens := 100\n", ""},
		{"main.go", "password := \"\"\n", ""},
		{"tok.py", "import tokenize\ntokens = tokenize.tokenize(f.readline)\n", ""},
		{"aws.md", "AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE\n", ""},
		// string literals in code that are not secrets (issue 10: whole Go
		// standard-library files were dropped for these lines)
		{"net/http/transport_test.go", "func TestX(t *testing.T) {\n\tconst password = \"@/?!\"\n}\n", ""},
		{"net/http/httputil/reverseproxy_test.go", "\tconst fakeConnectionToken = \"X-Fake-Connection-Token\"\n", ""},
		{"net/url/gen_encoding_table.go", "var names = map[encoding]string{\n\tencodeUserPassword:   \"encodeUserPassword\",\n}\n", ""},
		{"auth.py", "PASSWORD_FIELD = \"password_confirmation\"\nsecret_header = 'X-Secret-Header'\n", ""},
	} {
		got, why := r.SensitiveContent(tc.path, []byte(tc.content))
		if got != (tc.reason != "") || !strings.Contains(why, tc.reason) {
			t.Errorf("SensitiveContent(%s, %q) = %v %q, want reason containing %q", tc.path, tc.content, got, why, tc.reason)
		}
		if got && strings.Contains(why, "hunter22") {
			t.Errorf("reason leaks the secret: %q", why)
		}
	}
	r.ScanContent = false
	if got, _ := r.SensitiveContent("s.py", []byte(fake("password = \"", "hunter22", "\"\n"))); got {
		t.Error("ScanContent off still scans")
	}
}
