package memory

import (
	"fmt"
	"math/rand/v2"
	"strings"
)

// baseWords is an engineering vocabulary for realistic generated texts.
var baseWords = strings.Fields(`
the a to of and in for on with is was by that this it from as be are at or not when
after before into over under all any each per via only also but then than so if
api auth authentication authorization token session cookie header request response
handler middleware router endpoint server client service worker queue stream topic
event consumer producer subject message broker nats jetstream kv bucket store cache
database postgres sqlite index query table schema migration column row transaction
lock mutex goroutine channel context deadline timeout retry backoff error errors bug
fix fixed fixes issue issues panic crash leak race deadlock regression flaky test
tests unit integration fixture benchmark latency throughput slow slower performance
memory cpu allocation heap gc pressure pool buffer batch limit rate quota budget
architecture design structure layer module package interface boundary dependency
security vulnerability injection xss csrf secret key rotation tls certificate
pattern idempotent retryable ordering exactly once delivery ack nak redelivery
config flag env default option setting feature rollout deploy release version
build ci pipeline lint vet docs readme comment naming refactor cleanup rename
user team agent task branch fact observation consolidation merge parent child
insight decision discovery durable ephemeral confidence threshold duplicate
log logging metric metrics trace tracing span alert dashboard prometheus
json yaml proto encoding decoding parse parser validation schema field payload
file path directory upload download storage disk network socket connection dns
uses should must never always returns accepts rejects handles avoids prevents
causes breaks requires supports allows blocks keeps drops sends reads writes
large small new old first last every missing wrong stale invalid empty nil
`)

// vocabulary returns baseWords plus n synthetic identifiers (a long tail of
// rare terms, as in real code-related notes).
func vocabulary(n int, r *rand.Rand) []string {
	v := append([]string(nil), baseWords...)
	parts := []string{"user", "order", "fact", "task", "repo", "svc", "cfg", "http", "grpc", "auth", "cache", "db", "ws", "job", "node"}
	suffix := []string{"handler", "store", "client", "id", "manager", "loader", "v2", "test", "util", "mw"}
	for i := 0; i < n; i++ {
		switch r.IntN(3) {
		case 0:
			v = append(v, fmt.Sprintf("%s_%s%d", parts[r.IntN(len(parts))], suffix[r.IntN(len(suffix))], i))
		case 1:
			v = append(v, fmt.Sprintf("%s%s%d", parts[r.IntN(len(parts))], suffix[r.IntN(len(suffix))], i))
		default:
			v = append(v, fmt.Sprintf("err%d", i))
		}
	}
	return v
}

// textGen generates texts over a Zipf-distributed vocabulary; dupRate of
// them are near duplicates of an earlier text made by small edits.
type textGen struct {
	r       *rand.Rand
	vocab   []string
	zipf    *rand.Zipf
	minLen  int
	maxLen  int
	dupRate float64
	texts   []string
}

func newTextGen(seed uint64, vocab []string, minLen, maxLen int, dupRate float64) *textGen {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	return &textGen{r: r, vocab: vocab, zipf: rand.NewZipf(r, 1.1, 2, uint64(len(vocab)-1)),
		minLen: minLen, maxLen: maxLen, dupRate: dupRate}
}

func (g *textGen) word() string { return g.vocab[g.zipf.Uint64()] }

func (g *textGen) next() string {
	var t string
	if len(g.texts) > 0 && g.r.Float64() < g.dupRate {
		// Mostly recent texts, sometimes any: chains of edits of edits.
		var src string
		if g.r.IntN(2) == 0 {
			src = g.texts[len(g.texts)-1-g.r.IntN(min(len(g.texts), 50))]
		} else {
			src = g.texts[g.r.IntN(len(g.texts))]
		}
		t = g.edit(src)
	} else {
		n := g.minLen + g.r.IntN(g.maxLen-g.minLen+1)
		w := make([]string, n)
		for i := range w {
			w[i] = g.word()
		}
		if n > 0 {
			w[0] = strings.ToUpper(w[0][:1]) + w[0][1:]
		}
		t = strings.Join(w, " ") + "."
	}
	g.texts = append(g.texts, t)
	return t
}

// edit applies one or two small edits to a text.
func (g *textGen) edit(src string) string {
	w := strings.Fields(src)
	for e := 1 + g.r.IntN(2); e > 0; e-- {
		switch k := g.r.IntN(7); {
		case k == 0 && len(w) > 0: // replace a word
			w[g.r.IntN(len(w))] = g.word()
		case k == 1: // insert a word
			i := g.r.IntN(len(w) + 1)
			w = append(w[:i], append([]string{g.word()}, w[i:]...)...)
		case k == 2 && len(w) > 1: // delete a word
			i := g.r.IntN(len(w))
			w = append(w[:i], w[i+1:]...)
		case k == 3 && len(w) > 1: // swap two words (same set)
			i, j := g.r.IntN(len(w)), g.r.IntN(len(w))
			w[i], w[j] = w[j], w[i]
		case k == 4 && len(w) > 0: // change case (same set)
			i := g.r.IntN(len(w))
			w[i] = strings.ToUpper(w[i])
		case k == 5 && len(w) > 0: // punctuation (same set)
			i := g.r.IntN(len(w))
			w[i] += []string{",", ";", "!", " -", ":"}[g.r.IntN(5)]
		default: // repeat a word (same set)
			if len(w) > 0 {
				w = append(w, w[g.r.IntN(len(w))])
			}
		}
	}
	return strings.Join(w, " ")
}

var obsTypes = []string{TypeInsight, TypeInsight, TypeInsight, TypeDecision, TypeDiscovery, TypeDiscovery, "tool_use", "error"}

// genObservations returns n observations (a realistic type mix) from g.
func genObservations(g *textGen, n int) []Observation {
	obs := make([]Observation, n)
	for i := range obs {
		obs[i] = Observation{ID: fmt.Sprintf("obs%d", i), Type: obsTypes[g.r.IntN(len(obsTypes))], Text: g.next()}
	}
	return obs
}

var confidences = []float64{0.5, 0.7, 0.8, 0.9, 0.9, 0.95, 1.0, 1.0}

// genFacts returns n facts from g with confidences that often tie.
func genFacts(g *textGen, n int, prefix string) []Fact {
	fs := make([]Fact, n)
	for i := range fs {
		t := g.next()
		fs[i] = Fact{ID: fmt.Sprintf("%s%d", prefix, i), Text: t, Category: Category(TypeInsight, t), Confidence: confidences[g.r.IntN(len(confidences))]}
	}
	return fs
}

// counterIDs returns a deterministic newID.
func counterIDs(prefix string) func() string {
	n := 0
	return func() string { n++; return fmt.Sprintf("%s%d", prefix, n) }
}
