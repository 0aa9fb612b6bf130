package httpapi

import (
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestWrapRecoversPanics: a panicking route answers 500 internal in the
// error shape, without leaking the panic value.
func TestWrapRecoversPanics(t *testing.T) {
	t.Parallel()
	s := &server{cfg: Config{}.withDefaults(), log: slog.New(slog.DiscardHandler)}
	h := s.wrap(func(http.ResponseWriter, *http.Request) error { panic("secret detail") })
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/x", nil))
	if rec.Code != http.StatusInternalServerError || !strings.Contains(rec.Body.String(), `"code":"internal"`) || strings.Contains(rec.Body.String(), "secret") {
		t.Fatalf("panic answer: %d %s", rec.Code, rec.Body)
	}

	// A failure after the response started cannot be answered: the
	// response is cut instead.
	h = s.wrap(func(w http.ResponseWriter, _ *http.Request) error {
		_, _ = w.Write([]byte("partial"))
		return errors.New("broke mid-stream")
	})
	defer func() {
		if v := recover(); v != http.ErrAbortHandler {
			t.Fatalf("recovered %v; want http.ErrAbortHandler", v)
		}
	}()
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/x", nil))
	t.Fatal("a failure after the response started did not abort it")
}
