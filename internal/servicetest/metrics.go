package servicetest

import (
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
)

// Metric reads one sample (its name with labels, as exported) from a
// running server's /metrics at url; -1 when it is missing.
func Metric(t testing.TB, url, sample string) float64 {
	t.Helper()
	resp, err := http.Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	for _, line := range strings.Split(string(body), "\n") {
		if v, ok := strings.CutPrefix(line, sample+" "); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil {
				t.Fatalf("metric %s: %q", sample, line)
			}
			return f
		}
	}
	return -1
}
