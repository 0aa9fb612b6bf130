package chunking

import (
	"path"
	"slices"
	"strings"
	"unicode"
)

// Rules decide which files are never read, and which contents are never
// chunked. Start from [DefaultRules] and adjust the lists; doc.go describes
// the defaults. Name globs use path.Match syntax and are matched against a
// single path segment (a file or directory name); path globs are matched,
// segment by segment with "**" for any number of segments, against the end
// of a path (so ".aws/credentials" matches "home/.aws/credentials").
type Rules struct {
	// SecretDirs are names of directories that hold secrets or version
	// control internals; nothing below them is read.
	SecretDirs []string
	// AgentDirs are names of AI-agent instruction folders.
	AgentDirs []string
	// CacheDirs are names of dependency, cache and build-output directories.
	CacheDirs []string
	// VendorDirs are names of vendored third-party code directories,
	// excluded only when SkipVendor is set.
	VendorDirs []string
	SkipVendor bool
	// SecretFiles are names of files holding key material or credentials.
	SecretFiles []string
	// SecretPaths are path globs of credential stores inside well-known
	// folders (".aws/credentials", ".docker/config.json", ...).
	SecretPaths []string
	// AgentFiles are names of AI-agent instruction files; AgentPaths are
	// path globs of agent instruction folders below other folders.
	AgentFiles []string
	AgentPaths []string
	// SensitiveWords exclude a configuration or data file (one whose
	// extension is in DataExtensions) when a word of its name (split at
	// punctuation and camelCase, singular or plural) is one of them;
	// SensitiveSubstrings do so when its lower-cased name contains one of
	// them anywhere. Source files are never excluded by these, so
	// tokenize.py, secrets.py and keymap.go are read.
	SensitiveWords      []string
	SensitiveSubstrings []string
	DataExtensions      []string
	// GitIgnore holds the repository's .gitignore patterns; nil ignores
	// nothing. [Rules.Walk] loads every .gitignore it meets.
	GitIgnore *GitIgnore
	// ScanContent enables [Rules.SensitiveContent].
	ScanContent bool
	// MaxFileBytes skips larger files in [Rules.Walk] (0: no limit).
	MaxFileBytes int64
}

// DefaultRules returns the default exclusion rules (see the package
// documentation).
func DefaultRules() Rules {
	return Rules{
		SecretDirs: []string{".git", ".hg", ".svn", ".ssh", ".gnupg", ".aws", ".azure", ".kube",
			".password-store", ".secrets"},
		AgentDirs: []string{".claude", ".cursor", ".codex", ".aider*", ".windsurf", ".continue",
			".roo", ".cline", ".gemini", ".amazonq", ".kiro", ".junie", ".openhands", ".goose"},
		CacheDirs: []string{"node_modules", "bower_components", "__pycache__", ".venv", "venv", ".virtualenv",
			".tox", ".nox", ".pytest_cache", ".mypy_cache", ".ruff_cache", ".hypothesis", ".ipynb_checkpoints",
			"*.egg-info", ".eggs", "dist", "build", ".cache", "target", ".gradle", ".next", ".nuxt",
			".svelte-kit", ".parcel-cache", ".turbo", ".terraform", ".serverless", "coverage", "htmlcov",
			".idea", ".vs"},
		VendorDirs: []string{"vendor", "third_party"},
		SkipVendor: true,
		SecretFiles: []string{".env", ".env.*", "*.env", ".envrc", "*.pem", "*.key", "*.crt.key", "id_rsa*", "id_dsa*",
			"id_ecdsa*", "id_ed25519*", "*.p12", "*.pfx", "*.keystore", "*.jks", "*.p8", "*.ppk", "*.asc", "*.gpg",
			"*.kdbx", "*.ovpn", ".netrc", "_netrc", ".npmrc", ".pypirc", ".yarnrc", ".yarnrc.yml", ".git-credentials",
			".gitcookies", ".htpasswd", ".pgpass", ".my.cnf", ".boto", ".s3cfg", "credentials", "credentials.json",
			"credentials.yml", "credentials.yaml", "client_secret*.json", "service-account*.json", "*.tfstate",
			"*.tfstate.*", "*.tfvars", "secrets.yml", "secrets.yaml", "secrets.json", "secrets.toml"},
		SecretPaths: []string{".aws/credentials", ".aws/config", ".docker/config.json", ".kube/config",
			".config/gh/hosts.yml", ".config/gcloud/**", ".azure/**", ".m2/settings.xml", ".gradle/gradle.properties",
			".cargo/credentials", ".cargo/credentials.toml", ".terraform.d/credentials.tfrc.json"},
		AgentFiles: []string{".aider*", ".cursorrules", ".windsurfrules", ".clinerules", ".roorules",
			".cursorignore", ".codeiumignore"},
		AgentPaths: []string{".github/agents", ".github/instructions", ".github/prompts",
			".github/copilot-instructions.md"},
		SensitiveWords:      []string{"password", "passwd", "secret", "token", "key", "credential", "credentials", "apikey"},
		SensitiveSubstrings: []string{"password", "passwd", "secret", "credential", "apikey", "api_key", "api-key", "privatekey", "private_key", "private-key", "accesskey", "access_key"},
		DataExtensions: []string{"", ".json", ".json5", ".jsonc", ".yaml", ".yml", ".toml", ".ini", ".env", ".txt",
			".cfg", ".conf", ".config", ".properties", ".xml", ".plist", ".csv", ".tsv", ".dat", ".bak", ".old",
			".backup", ".cnf", ".rc"},
		ScanContent:  true,
		MaxFileBytes: 4 << 20,
	}
}

// Excluded reports whether the file or directory at relPath (repository-
// relative, slash-separated) must not be read, and the rule that excludes
// it. A path below an excluded directory is excluded.
func (r Rules) Excluded(relPath string, isDir bool) (bool, string) {
	p := strings.Trim(path.Clean("/"+strings.ReplaceAll(relPath, "\\", "/")), "/")
	if p == "" {
		return false, ""
	}
	segs := strings.Split(p, "/")
	for i := 1; i <= len(segs); i++ {
		name := segs[i-1]
		dir := i < len(segs) || isDir
		if dir {
			switch {
			case matchName(r.SecretDirs, name):
				return true, "secret or version-control directory " + name + "/"
			case matchName(r.AgentDirs, name):
				return true, "agent instruction directory " + name + "/"
			case matchName(r.CacheDirs, name):
				return true, "cache or build output directory " + name + "/"
			case r.SkipVendor && matchName(r.VendorDirs, name):
				return true, "vendored code directory " + name + "/"
			}
		}
		prefix := segs[:i]
		if matchPath(r.SecretPaths, prefix) {
			return true, "credential store " + strings.Join(prefix, "/")
		}
		if matchPath(r.AgentPaths, prefix) {
			return true, "agent instructions " + strings.Join(prefix, "/")
		}
	}
	if !isDir {
		name := segs[len(segs)-1]
		switch {
		case matchName(r.SecretFiles, name):
			return true, "secret file " + name + " (key material or credentials)"
		case matchName(r.AgentFiles, name):
			return true, "agent instruction file " + name
		}
		if w := r.sensitiveName(name); w != "" {
			return true, "configuration or data file named after a secret (" + w + ")"
		}
	}
	if r.GitIgnore.Match(p, isDir) {
		return true, "ignored by .gitignore"
	}
	return false, ""
}

// sensitiveName returns the sensitive word in a data file's name, or "".
func (r Rules) sensitiveName(name string) string {
	ext := strings.ToLower(path.Ext(name))
	stem := strings.TrimSuffix(name, path.Ext(name))
	if strings.HasPrefix(name, ".") && !strings.Contains(name[1:], ".") {
		ext, stem = "", name // ".token" has no extension
	}
	if !slices.Contains(r.DataExtensions, ext) {
		return ""
	}
	lower := strings.ToLower(stem)
	for _, s := range r.SensitiveSubstrings {
		if s != "" && strings.Contains(lower, strings.ToLower(s)) {
			return s
		}
	}
	for _, w := range nameWords(stem) {
		for _, s := range r.SensitiveWords {
			s = strings.ToLower(s)
			if w == s || w == s+"s" {
				return s
			}
		}
	}
	return ""
}

// nameWords splits a file name into lower-case words at punctuation and
// camelCase boundaries: "myAPIKey-v2" gives my, api, key, v2.
func nameWords(s string) []string {
	var words []string
	var cur []rune
	rs := []rune(s)
	flush := func() {
		if len(cur) > 0 {
			words = append(words, strings.ToLower(string(cur)))
			cur = cur[:0]
		}
	}
	for i, c := range rs {
		if !unicode.IsLetter(c) && !unicode.IsDigit(c) {
			flush()
			continue
		}
		if unicode.IsUpper(c) && len(cur) > 0 {
			prevLower := unicode.IsLower(rs[i-1]) || unicode.IsDigit(rs[i-1])
			nextLower := i+1 < len(rs) && unicode.IsLower(rs[i+1])
			if prevLower || (unicode.IsUpper(rs[i-1]) && nextLower) {
				flush()
			}
		}
		cur = append(cur, c)
	}
	flush()
	return words
}

// matchName reports whether name matches one of the name globs.
func matchName(globs []string, name string) bool {
	for _, g := range globs {
		if globMatch(g, name) {
			return true
		}
	}
	return false
}

// matchPath reports whether the end of segs matches one of the path globs.
func matchPath(globs []string, segs []string) bool {
	for _, g := range globs {
		pat := append([]string{"**"}, strings.Split(strings.Trim(g, "/"), "/")...)
		if matchSegs(pat, segs) {
			return true
		}
	}
	return false
}
