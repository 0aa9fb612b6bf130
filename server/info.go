package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// Info records where a running server listens, in <data>/serve.json, so
// other commands on the machine can find it.
type Info struct {
	PID       int       `json:"pid"`
	NATSURL   string    `json:"nats_url"`
	HTTPURL   string    `json:"http_url,omitempty"`
	MCPURL    string    `json:"mcp_url,omitempty"`
	DataDir   string    `json:"data_dir"`
	Embedded  bool      `json:"embedded"`
	StartedAt time.Time `json:"started_at"`
	// Workspaces are the VINE workspace roots (absolute, symbolic links
	// resolved); a relative .vine path resolves against the first.
	Workspaces []string `json:"workspaces"`
	// Auth is true when every listener requires a token.
	Auth bool `json:"auth,omitempty"`
	// AdminTokenFile is where the admin token was written on first start
	// (the token itself is never printed or recorded here).
	AdminTokenFile string `json:"admin_token_file,omitempty"`
	// AdminTokenCreated is true when this start created the admin token.
	AdminTokenCreated bool `json:"-"`
	// TLS is true when NATS and HTTP are served over TLS.
	TLS bool `json:"tls,omitempty"`
}

// InfoPath is the path of the info file of a data directory.
func InfoPath(dataDir string) string { return filepath.Join(dataDir, "serve.json") }

// ReadInfo reads a data directory's info file; (nil, nil) when none exists.
func ReadInfo(dataDir string) (*Info, error) {
	data, err := os.ReadFile(InfoPath(dataDir))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", InfoPath(dataDir), err)
	}
	var info Info
	if err := json.Unmarshal(data, &info); err != nil {
		return nil, fmt.Errorf("%s is corrupt: %w", InfoPath(dataDir), err)
	}
	return &info, nil
}

func writeInfo(dataDir string, info Info) error {
	data, err := json.MarshalIndent(info, "", "  ")
	if err != nil {
		return err
	}
	tmp := InfoPath(dataDir) + ".tmp"
	if err := os.WriteFile(tmp, append(data, '\n'), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", tmp, err)
	}
	return os.Rename(tmp, InfoPath(dataDir))
}
