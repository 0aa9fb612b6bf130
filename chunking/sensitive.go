package chunking

import (
	"bytes"
	"regexp"
	"strconv"
	"strings"
	"unicode"
)

// privateKeyBegin matches the first line of a PEM or PGP private key block.
var privateKeyBegin = regexp.MustCompile(`-----BEGIN[A-Z0-9 ]*PRIVATE KEY( BLOCK)?-----`)

// base64Run matches the body of a key block.
var base64Run = regexp.MustCompile(`[A-Za-z0-9+/]{40,}`)

// tokenPatterns match credentials by their well-known formats.
// Each has literals of which the content must hold one before the regexp
// runs.
var tokenPatterns = []struct {
	name     string
	literals []string
	re       *regexp.Regexp
}{
	{"AWS access key id", []string{"AKIA", "ASIA"}, regexp.MustCompile(`\b(?:AKIA|ASIA)[0-9A-Z]{16}\b`)},
	{"GitHub token", []string{"gho_", "ghp_", "ghu_", "ghs_", "ghr_", "github_pat_"}, regexp.MustCompile(`\b(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{40,})\b`)},
	{"GitLab token", []string{"glpat-"}, regexp.MustCompile(`\bglpat-[A-Za-z0-9_-]{20,}`)},
	{"Slack token", []string{"xoxa-", "xoxb-", "xoxp-", "xoxr-", "xoxs-"}, regexp.MustCompile(`\bxox[abprs]-[A-Za-z0-9-]{10,}`)},
	{"Google API key", []string{"AIza"}, regexp.MustCompile(`\bAIza[0-9A-Za-z_-]{35}\b`)},
	{"Stripe key", []string{"k_live_"}, regexp.MustCompile(`\b[sr]k_live_[0-9A-Za-z]{20,}`)},
	{"npm token", []string{"npm_"}, regexp.MustCompile(`\bnpm_[A-Za-z0-9]{36}\b`)},
	{"API secret key", []string{"sk-"}, regexp.MustCompile(`\bsk-(?:ant-|proj-|live-|test-)?[A-Za-z0-9_-]{16,}`)},
}

// credentialWords are lower-case fragments of which a line must hold one
// before credentialAssign runs on it.
var credentialWords = []string{"pass", "secret", "token", "key", "credential"}

// credentialAssign matches an assignment of a value to a name that ends in
// a credential word: password = "...", "api_key": "...", DB_PASSWORD=...,
// apiKey: '...'. Group 1 is the name; groups 2-4 a quoted value; group 5
// an unquoted value.
var credentialAssign = regexp.MustCompile(`(?i)\b([a-z0-9_.-]*(?:password|passwd|passphrase|secret|token|api[_-]?key|access[_-]?key|secret[_-]?key|private[_-]?key|auth[_-]?key|client[_-]?secret|credentials?))["']?[ \t]*(?::=|=>|:|=)[ \t]*(?:"([^"\n]*)"|'([^'\n]*)'|` + "`([^`\\n]*)`" + `|([^\s"'` + "`" + `#;,)\]}]+))`)

// placeholderWords are values that are not credentials.
var placeholderWords = map[string]bool{
	"password": true, "passwd": true, "secret": true, "token": true, "key": true, "apikey": true, "api_key": true,
	"changeme": true, "change_me": true, "change-me": true, "example": true, "sample": true, "dummy": true,
	"fake": true, "test": true, "testing": true, "placeholder": true, "none": true, "null": true, "nil": true,
	"true": true, "false": true, "undefined": true, "required": true, "optional": true, "hidden": true,
	"redacted": true, "bearer": true, "basic": true, "string": true, "str": true, "bool": true, "int": true,
	"number": true, "secure": true, "notasecret": true, "default": true, "empty": true, "unset": true,
}

// SensitiveContent reports whether content (of the file at relPath) holds
// a secret and must not be chunked, with the reason. It finds private key
// blocks ("-----BEGIN ... PRIVATE KEY-----" followed by key data), tokens
// in well-known formats (AWS access key ids, GitHub, GitLab, Slack, Google,
// Stripe, npm and "sk-..." API keys) and credential assignments: a name
// ending in password, secret, token, api_key, access_key, private_key,
// client_secret, credentials ... assigned a literal. In code files the
// literal must be quoted; in other files (configuration, scripts, docs) an
// unquoted value counts too, and in code the literal must look real
// (letters mixed with digits, not the name's own words: see realLooking).
// Placeholders are not credentials: empty or
// short values, values with spaces, references ($VAR, ${...}, {{...}},
// <...>, %(...)s), ALL_CAPS names, repeated characters (xxxx, ****) and
// words such as changeme, example, dummy or redacted. The reason names the
// line and the kind of secret, never the secret itself. It reports nothing
// when r.ScanContent is false.
func (r Rules) SensitiveContent(relPath string, content []byte) (bool, string) {
	if !r.ScanContent {
		return false, ""
	}
	lineOf := func(off int) string {
		return strconv.Itoa(bytes.Count(content[:off], []byte("\n")) + 1)
	}
	if bytes.Contains(content, []byte("PRIVATE KEY")) {
		for _, loc := range privateKeyBegin.FindAllIndex(content, -1) {
			tail := content[loc[1]:min(len(content), loc[1]+400)]
			if base64Run.Match(tail) {
				return true, "private key block at line " + lineOf(loc[0])
			}
		}
	}
	for _, tp := range tokenPatterns {
		if !containsAny(content, tp.literals) {
			continue
		}
		for _, loc := range tp.re.FindAllIndex(content, -1) {
			if tokenLooksReal(string(content[loc[0]:loc[1]])) {
				return true, tp.name + " at line " + lineOf(loc[0])
			}
		}
	}
	code := isCode(Language(relPath))
	lower := asciiLower(content)
	if !containsAny(lower, credentialWords) {
		return false, ""
	}
	for off, lineNo := 0, 1; off < len(content); lineNo++ {
		end := bytes.IndexByte(content[off:], '\n')
		if end < 0 {
			end = len(content)
		} else {
			end += off
		}
		line := content[off:end]
		if containsAny(lower[off:end], credentialWords) {
			for _, m := range credentialAssign.FindAllSubmatchIndex(line, -1) {
				var val string
				quoted := false
				for g := 2; g <= 5; g++ {
					if m[2*g] >= 0 {
						val = string(line[m[2*g]:m[2*g+1]])
						quoted = g < 5
						break
					}
				}
				if (!quoted && code) || placeholder(val) || (code && !realLooking(val, string(line[m[2]:m[3]]))) {
					continue
				}
				return true, "credential assignment (" + string(line[m[2]:m[3]]) + ") at line " + strconv.Itoa(lineNo)
			}
		}
		off = end + 1
	}
	return false, ""
}

// asciiLower lower-cases ASCII letters only, so that offsets into the
// result are offsets into b.
func asciiLower(b []byte) []byte {
	out := make([]byte, len(b))
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		out[i] = c
	}
	return out
}

// containsAny reports whether b contains one of the strings.
func containsAny(b []byte, subs []string) bool {
	for _, s := range subs {
		if bytes.Contains(b, []byte(s)) {
			return true
		}
	}
	return false
}

// tokenLooksReal rejects documentation examples and word-like matches.
func tokenLooksReal(tok string) bool {
	up := strings.ToUpper(tok)
	if strings.Contains(up, "EXAMPLE") || strings.Contains(up, "XXXX") {
		return false
	}
	hasDigit := strings.ContainsAny(tok, "0123456789")
	return hasDigit
}

// realLooking reports whether a string literal assigned to name in code
// looks like a secret rather than a label, a header or key name, or a
// test fixture: it mixes letters and digits, and is not made of the name's
// own words ("encodeUserPassword": "encodeUserPassword", a header name
// "X-Fake-Connection-Token", a password "@/?!" of punctuation). A string
// literal in code is not a credential store; real keys in code are caught
// by their formats (tokenPatterns) and key blocks.
func realLooking(val, name string) bool {
	letters, digits := false, false
	for _, c := range val {
		switch {
		case c >= '0' && c <= '9':
			digits = true
		case unicode.IsLetter(c):
			letters = true
		}
	}
	if !letters || !digits {
		return false
	}
	lv, ln := strings.ToLower(val), strings.ToLower(name)
	return !strings.Contains(lv, ln) && !strings.Contains(ln, lv)
}

// placeholder reports whether a value is obviously not a real credential.
func placeholder(v string) bool {
	v = strings.TrimSpace(v)
	if len(v) < 4 || strings.ContainsAny(v, " \t") {
		return true
	}
	if strings.HasPrefix(v, "=") || strings.HasPrefix(v, "$") || strings.HasPrefix(v, "%") ||
		strings.HasPrefix(v, "<") || strings.HasPrefix(v, "{") || strings.HasPrefix(v, "(") ||
		strings.HasPrefix(v, "[") || strings.Contains(v, "${") || strings.Contains(v, "{{") ||
		strings.Contains(v, "...") || strings.Contains(v, "…") {
		return true
	}
	lower := strings.ToLower(v)
	if placeholderWords[lower] {
		return true
	}
	for _, w := range []string{"example", "your_", "your-", "yourpassword", "placeholder", "changeme", "change_me",
		"dummy", "redacted", "xxxx", "****", "<", ">"} {
		if strings.Contains(lower, w) {
			return true
		}
	}
	if strings.Trim(v, v[:1]) == "" { // "aaaa", "----"
		return true
	}
	// An identifier in ALL_CAPS names a variable or setting, not a value.
	allCaps := true
	for _, c := range v {
		if !(c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_') {
			allCaps = false
			break
		}
	}
	if allCaps {
		return true
	}
	// A dotted or called reference such as os.environ.get or self.token.
	if !strings.ContainsAny(v, "0123456789") && strings.Trim(v, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_.()") == "" &&
		(strings.Contains(v, ".") || strings.Contains(v, "(")) {
		return true
	}
	return false
}
