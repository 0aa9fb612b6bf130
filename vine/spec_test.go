package vine_test

import (
	"strings"
	"testing"

	"github.com/trellis/trellis/vine"
)

// TestSpecTexts: the brief teaches the format's essentials and the agent
// loop; the full text has every rule and is much longer than the brief.
func TestSpecTexts(t *testing.T) {
	t.Parallel()
	for _, frag := range []string{"# ", "vine 1.2.0", "---", "notstarted", "-> ", "> ", "@artifact", "vine_next", "vine_expand", "vine_claim", "reviewing", "ready_to_complete", "atomic"} {
		if !strings.Contains(vine.SpecBrief, frag) {
			t.Errorf("brief lacks %q", frag)
		}
	}
	for _, frag := range []string{"Magic line", "Metadata", "delimiter", "prefix", "Canonical serialization", "island", "cycle",
		"needs_expansion", "half up", "add_task", "remove_task", "set_status", "update_ref_uri", "extract_to_ref", "taskId, depId",
		"prefix/id", "descendants", "validate", "Concurrency", "workspace roots"} {
		if !strings.Contains(vine.SpecFull, frag) {
			t.Errorf("full spec lacks %q", frag)
		}
	}
	if len(vine.SpecFull) < 2*len(vine.SpecBrief) {
		t.Errorf("full spec (%d bytes) is not much longer than the brief (%d)", len(vine.SpecFull), len(vine.SpecBrief))
	}
}
