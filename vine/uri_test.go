package vine

import (
	"path/filepath"
	"testing"
)

func TestResolveURI(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	other := t.TempDir()
	base := filepath.Join(root, "plans")
	tests := []struct {
		name  string
		base  string
		uri   string
		roots []string
		want  string
		err   string
	}{
		{"relative", base, "./infra.vine", []string{root}, filepath.Join(base, "infra.vine"), ""},
		{"relative up but inside", base, "../shared/x.vine", []string{root}, filepath.Join(root, "shared", "x.vine"), ""},
		{"second root", base, filepath.Join(other, "y.vine"), []string{root, other}, filepath.Join(other, "y.vine"), ""},
		{"file url", base, "file://" + filepath.ToSlash(filepath.Join(root, "z.vine")), []string{root}, filepath.Join(root, "z.vine"), ""},
		{"escape", base, "../../../etc/passwd", []string{root}, "", "outside the workspace roots"},
		{"absolute outside", base, filepath.Join(other, "y.vine"), []string{root}, "", "outside the workspace roots"},
		{"sibling with shared prefix", base, root + "-evil/x.vine", []string{root}, "", "outside the workspace roots"},
		{"other scheme", base, "https://example.com/x.vine", []string{root}, "", `scheme "https" is not supported`},
		{"remote file host", base, "file://server/x.vine", []string{root}, "", `remote host "server"`},
		{"no roots", base, "./x.vine", nil, "", "no workspace roots"},
		{"empty", base, " ", []string{root}, "", "empty vine uri"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := ResolveURI(tt.base, tt.uri, tt.roots)
			if tt.err != "" {
				wantErr(t, err, CodeInvalid, tt.err)
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("got %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}
