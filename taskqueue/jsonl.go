package taskqueue

import (
	"bufio"
	"encoding/json"
	"io"
)

// jsonlWriter writes one JSON value per line.
type jsonlWriter struct {
	bw  *bufio.Writer
	enc *json.Encoder
}

func newJSONLWriter(w io.Writer) *jsonlWriter {
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	return &jsonlWriter{bw: bw, enc: enc}
}

func (j *jsonlWriter) write(v any) error { return j.enc.Encode(v) }

func (j *jsonlWriter) flush() error { return j.bw.Flush() }
