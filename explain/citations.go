package explain

import "regexp"

// citationRE matches "[CITATION chunk_<hex>]", also with a colon or
// several ids separated by commas ("[CITATION: chunk_a, chunk_b]").
var citationRE = regexp.MustCompile(`\[CITATION:?\s*([^\]]*)\]`)

var chunkIDRE = regexp.MustCompile(`chunk_[0-9A-Za-z]+`)

// Citations returns the chunk ids an answer cites, in order of first
// appearance, each once.
func Citations(answer string) []string {
	var out []string
	seen := map[string]bool{}
	for _, m := range citationRE.FindAllStringSubmatch(answer, -1) {
		for _, id := range chunkIDRE.FindAllString(m[1], -1) {
			if !seen[id] {
				seen[id] = true
				out = append(out, id)
			}
		}
	}
	return out
}

// Check splits an answer's citations into those among the given chunks
// (valid) and those that are not (invalid: invented, or from elsewhere).
func Check(answer string, chunks []Chunk) (valid, invalid []string) {
	known := map[string]bool{}
	for _, c := range chunks {
		known[c.ChunkID] = true
	}
	valid, invalid = []string{}, []string{}
	for _, id := range Citations(answer) {
		if known[id] {
			valid = append(valid, id)
		} else {
			invalid = append(invalid, id)
		}
	}
	return valid, invalid
}
