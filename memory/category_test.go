package memory

import "testing"

func TestCategory(t *testing.T) {
	tests := []struct {
		typ, text, want string
	}{
		// Type overrides, whatever the text says.
		{"decision", "Fix the auth bug", CategoryDecision},
		{"discovery", "Fix the auth bug", CategoryDiscovery},
		{"decision", "", CategoryDecision},
		{"Decision", "nothing special", CategoryInsight}, // types are case-sensitive
		{"insight", "nothing special", CategoryInsight},
		{"", "nothing special", CategoryInsight},
		{"tool_use", "", CategoryInsight},

		// Every keyword, as a whole token.
		{"insight", "a bug in parsing", CategoryBugFix},
		{"insight", "the fix works", CategoryBugFix},
		{"insight", "an error was returned", CategoryBugFix},
		{"insight", "known issue with dns", CategoryBugFix},
		{"insight", "the architect agreed", CategoryArchitecture},
		{"insight", "the design is layered", CategoryArchitecture},
		{"insight", "the structure is flat", CategoryArchitecture},
		{"insight", "security review passed", CategorySecurity},
		{"insight", "a vulnerability in tls", CategorySecurity},
		{"insight", "auth happens in middleware", CategorySecurity},
		{"insight", "performance is fine", CategoryPerformance},
		{"insight", "latency is 20ms", CategoryPerformance},
		{"insight", "startup is slow", CategoryPerformance},
		{"insight", "throughput doubled", CategoryPerformance},
		{"insight", "the outbox pattern", CategoryPattern},

		// Tokens that start with a keyword match.
		{"insight", "Bugs everywhere", CategoryBugFix},
		{"insight", "bugfix release", CategoryBugFix},
		{"insight", "Fixed in v2", CategoryBugFix},
		{"insight", "it fixes retries", CategoryBugFix},
		{"insight", "errors are wrapped", CategoryBugFix},
		{"insight", "open issues remain", CategoryBugFix},
		{"insight", "the architecture is event sourced", CategoryArchitecture},
		{"insight", "architectural layers", CategoryArchitecture},
		{"insight", "designed for replay", CategoryArchitecture},
		{"insight", "structured logging", CategoryArchitecture},
		{"insight", "authentication uses oidc", CategorySecurity},
		{"insight", "AuthZ checks", CategorySecurity},
		{"insight", "vulnerability scanner", CategorySecurity},
		{"insight", "latency_p99 regressed", CategoryPerformance}, // "_" splits: latency is a token
		{"insight", "a slowdown at startup", CategoryPerformance},
		{"insight", "slower than expected", CategoryPerformance},
		{"insight", "patterns emerge", CategoryPattern},

		// A keyword inside a word never matches.
		{"insight", "the prefix is stored", CategoryInsight},
		{"insight", "use debug logging", CategoryInsight},
		{"insight", "a hotfix went out", CategoryInsight},
		{"insight", "tissue samples", CategoryInsight},
		{"insight", "redesign later", CategoryInsight},
		{"insight", "oauth2 provider", CategoryInsight},
		{"insight", "infrastructure as code", CategoryInsight},
		{"insight", "a pattern_matcher", CategoryPattern}, // "_" splits
		{"insight", "antipattern", CategoryInsight},

		// Exceptions.
		{"insight", "the author of the module", CategoryInsight},
		{"insight", "authored by the team", CategoryInsight},
		{"insight", "Authors and authorship", CategoryInsight},
		{"insight", "authorization is checked per route", CategorySecurity},
		{"insight", "authorize every request", CategorySecurity},
		{"insight", "authorised clients only", CategorySecurity},
		{"insight", "authorisation rules", CategorySecurity},
		{"insight", "the author wrote the authentication layer", CategorySecurity}, // one token is enough
		{"insight", "test fixtures live in testdata", CategoryInsight},
		{"insight", "a fixture per case", CategoryInsight},
		{"insight", "fixtures were wrong so fixed them", CategoryBugFix},
		{"insight", "the designated owner", CategoryInsight},
		{"insight", "designation of a leader", CategoryInsight},
		{"insight", "the token issuer is checked", CategoryInsight},
		{"insight", "tokens issued by the gateway", CategoryInsight},
		{"insight", "issues with the issuer", CategoryBugFix},

		// First rule wins, whatever the order of the words.
		{"insight", "slow auth design bug", CategoryBugFix},
		{"insight", "pattern for auth: design", CategoryArchitecture},
		{"insight", "pattern: slow security", CategorySecurity},
		{"insight", "pattern causing latency", CategoryPerformance},
		{"insight", "structure of the error path", CategoryBugFix},
		{"discovery", "pattern", CategoryDiscovery},
	}
	for _, tt := range tests {
		if got := Category(tt.typ, tt.text); got != tt.want {
			t.Errorf("Category(%q, %q) = %q, want %q", tt.typ, tt.text, got, tt.want)
		}
	}
}
