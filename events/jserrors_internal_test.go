package events

import (
	"errors"
	"fmt"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// TestClassifyDirect: every answer a direct get may bring (the statuses
// nats-server sends, and the no-responders status a request without a
// stream leader gets) is classified in one place; 503 is unavailable
// (worth retrying), a refusal names its status.
func TestClassifyDirect(t *testing.T) {
	status := func(st, desc string) *nats.Msg {
		h := nats.Header{}
		h.Set("Status", st)
		h.Set("Description", desc)
		return &nats.Msg{Header: h}
	}
	stored := &nats.Msg{Header: nats.Header{"Nats-Sequence": []string{"7"}}, Data: []byte(`{}`)}
	for _, c := range []struct {
		name    string
		msg     *nats.Msg
		want    directKind
		errText string
	}{
		{"message", stored, directMsg, ""},
		{"message without headers", &nats.Msg{Data: []byte(`{}`)}, directMsg, ""},
		{"end of batch", status("204", "EOB"), directEnd, "direct get status 204 EOB"},
		{"not found", status("404", "Message Not Found"), directNone, "direct get status 404 Message Not Found"},
		{"no responders", status("503", ""), directUnanswered, nats.ErrNoResponders.Error()},
		{"too many results", status("413", "Too Many Results"), directRefused, "direct get status 413 Too Many Results"},
		{"bad request", status("408", "Bad Request"), directRefused, "direct get status 408 Bad Request"},
		{"server error", status("500", "disk gone"), directFailed, "direct get status 500 disk gone"},
	} {
		kind, err := classifyDirect(c.msg)
		if kind != c.want {
			t.Errorf("%s: kind %d, want %d", c.name, kind, c.want)
		}
		if c.errText == "" && err != nil || c.errText != "" && (err == nil || err.Error() != c.errText) {
			t.Errorf("%s: error %v, want %q", c.name, err, c.errText)
		}
	}
	_, err := classifyDirect(status("503", ""))
	if !errors.Is(err, nats.ErrNoResponders) || !IsUnavailable(err) {
		t.Errorf("503: %v is not unavailable", err)
	}
	_, err = classifyDirect(status("500", "disk gone"))
	if IsUnavailable(err) {
		t.Errorf("500: %v counts as unavailable", err)
	}
}

// TestStoreCreateFailed: only a stream create error whose store failed is
// sent again (Ensure), not another cause the same code carries.
func TestStoreCreateFailed(t *testing.T) {
	for _, c := range []struct {
		err  error
		want bool
	}{
		{&jetstream.APIError{Code: 500, ErrorCode: 10049, Description: "error creating store for stream"}, true},
		{fmt.Errorf("create stream X: %w", &jetstream.APIError{Code: 500, ErrorCode: 10049, Description: "error creating store for stream"}), true},
		{&jetstream.APIError{Code: 500, ErrorCode: 10049, Description: "replicas > 1 not supported in non-clustered mode"}, false},
		{&jetstream.APIError{Code: 500, ErrorCode: 10077, Description: "error creating store for stream"}, false},
		{errors.New("error creating store for stream"), false},
	} {
		if got := storeCreateFailed(c.err); got != c.want {
			t.Errorf("storeCreateFailed(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}
