package trellis_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/trellis/trellis"
)

// TestDecodeStrict covers the strict decoder without a server.
func TestDecodeStrict(t *testing.T) {
	t.Parallel()
	type req struct {
		Name  string            `json:"name"`
		N     int               `json:"n,omitempty"`
		Tags  []string          `json:"tags"`
		Meta  map[string]string `json:"meta"`
		Skip  string            `json:"-"`
		Plain bool
	}
	cases := []struct {
		body, field, msg string // field "" means success
	}{
		{`{"name":"a","n":2,"tags":["x"],"meta":{"k":"v"},"Plain":true}`, "", ""},
		{" \n{\"name\":\"a\"}\r\n\t ", "", ""},
		{`{"name":"\u00e9"}`, "", ""},
		{`{}`, "", ""},
		{`{"name":"a","n":null}`, "", ""},
		{`{"Skip":"x"}`, "Skip", "unknown field"},
		{`{"-":"x"}`, "-", "unknown field"},
		{`{"plain":true}`, "plain", `did you mean "Plain"`},
		{`{"NAME":"a"}`, "NAME", `did you mean "name"`},
		{`{"nope":1}`, "nope", "known fields: name, n, tags, meta, Plain"},
		{`{"name":"a","name":"a"}`, "name", "more than once"},
		{`{"n":"1"}`, "n", "must be an integer, not JSON string"},
		{`{"tags":[1]}`, "tags", "must be a string"},
		{`{"tags":{}}`, "tags", "must be an array of strings"},
		{`{"meta":[]}`, "meta", "must be an object of strings"},
		{`{"meta":{"k":true}}`, "meta", "must be a string"},
		{`{"Plain":"yes"}`, "Plain", "true or false"},
		{`{"name":"a"`, "body", "unexpected end"},
		{`{"name" "a"}`, "body", "not valid JSON"},
		{`{"name":'a'}`, "body", "not valid JSON"},
		{`{"name":"a"}}`, "body", "after the JSON object"},
		{`{"name":"a"} x`, "body", "after the JSON object (at byte 13)"},
		{`[]`, "body", "must be a JSON object"},
		{`true`, "body", "must be a JSON object"},
		{"", "body", "empty"},
		{"  \n ", "body", "empty"},
		{"{\"name\":\"\xc3\x28\"}", "body", "UTF-8"},
		{"\xef\xbb\xbf{}", "body", "must be a JSON object"}, // a BOM is not JSON
		{`{"name":"` + strings.Repeat("a", trellis.MaxRequestBytes) + `"}`, "body", "at most"},
	}
	for _, c := range cases {
		var v req
		err := trellis.DecodeRequest([]byte(c.body), &v)
		if c.field == "" {
			if err != nil {
				t.Errorf("%q: %v", c.body, err)
			}
			continue
		}
		var te *trellis.Error
		if !errors.As(err, &te) || te.Code != trellis.CodeInvalid || te.Field != c.field || !strings.Contains(te.Message, c.msg) {
			t.Errorf("%q: %#v; want invalid %q containing %q", c.body, te, c.field, c.msg)
		}
	}
}
