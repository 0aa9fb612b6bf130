package auth

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/trellis/trellis"
	"github.com/trellis/trellis/events"
	"github.com/trellis/trellis/projections"
)

// Service is a server's access control: the token commands and the
// registry that checks presented tokens, kept current from the log.
type Service struct {
	tokens   *Tokens
	registry *Registry
	runner   *projections.Runner
	timeout  time.Duration
}

// NewService returns the access control over store; Start follows the
// token stream.
func NewService(store *events.Store, log *slog.Logger) *Service {
	reg := NewRegistry()
	return &Service{tokens: NewTokens(store), registry: reg, runner: projections.NewRunner(store, reg, log), timeout: 10 * time.Second}
}

// Start folds every token event and follows the stream.
func (s *Service) Start(ctx context.Context) error {
	if err := s.runner.Start(ctx); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	if err := s.runner.CatchUp(ctx); err != nil {
		return fmt.Errorf("token registry: %w", err)
	}
	return nil
}

// Stop stops following the stream.
func (s *Service) Stop() { _ = s.runner.Stop() }

// Registry returns the registry.
func (s *Service) Registry() *Registry { return s.registry }

// Verify implements Verifier.
func (s *Service) Verify(secret string) (Identity, error) { return s.registry.Verify(secret) }

// wait returns once this server's registry has applied seq, so the change
// a caller just made is in force here when the call returns (other servers
// apply it as their feed delivers it, in milliseconds).
func (s *Service) wait(ctx context.Context, seq uint64) error {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	if err := s.runner.WaitFor(ctx, seq); err != nil {
		return trellis.Errorf(trellis.CodeUnavailable, "token registry did not apply #%d: %w", seq, err)
	}
	return nil
}

// Create makes a token (see Tokens.Create) and returns once it works here.
func (s *Service) Create(ctx context.Context, req CreateRequest) (*Created, error) {
	c, seq, err := s.tokens.Create(ctx, req)
	if err != nil {
		return nil, err
	}
	return c, s.wait(ctx, seq)
}

// Revoke revokes a token and returns once it no longer works here.
func (s *Service) Revoke(ctx context.Context, req RevokeRequest) (*Token, error) {
	t, seq, err := s.tokens.Revoke(ctx, req)
	if err != nil {
		return nil, err
	}
	return t, s.wait(ctx, seq)
}

// List returns every token (never a secret), after catching up with the
// log.
func (s *Service) List(ctx context.Context) ([]Token, error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	if err := s.runner.CatchUp(ctx); err != nil {
		return nil, trellis.Errorf(trellis.CodeUnavailable, "token registry: %w", err)
	}
	return s.registry.List(), nil
}

// AdminTokenName is the name of the admin token `serve --auth` creates on
// first start.
const AdminTokenName = "admin"

// AdminTokenPath is where `serve --auth` stores the admin token it
// creates: <data>/auth/admin.token, mode 0600.
func AdminTokenPath(dataDir string) string { return filepath.Join(dataDir, "auth", "admin.token") }

// Bootstrap makes sure an admin can get in: when the log holds no token
// named admin (active or revoked), it creates one (with secret when given,
// else a random one), writes it to AdminTokenPath (mode 0600) and reports
// created. An existing admin token is left alone: its file is where the
// server that created it wrote it. Two servers starting at once on one
// cluster cannot both create it: the loser sees a conflict and reports
// the token as existing.
func (s *Service) Bootstrap(ctx context.Context, dataDir, secret string) (path string, created bool, err error) {
	path = AdminTokenPath(dataDir)
	if _, ok := s.registry.Lookup(AdminTokenName); ok {
		return path, false, nil
	}
	c, err := s.Create(ctx, CreateRequest{Name: AdminTokenName, Role: string(RoleAdmin), Secret: secret})
	if trellis.ErrorCode(err) == trellis.CodeConflict {
		return path, false, nil
	}
	if err != nil {
		return path, false, fmt.Errorf("create the admin token: %w", err)
	}
	if err := writeSecret(path, c.Token); err != nil {
		return path, false, err
	}
	return path, true, nil
}

// writeSecret writes a token to path, readable by its owner only.
func writeSecret(path, secret string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("create %s: %w", filepath.Dir(path), err)
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(secret+"\n"), 0o600); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Chmod(tmp, 0o600); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// ReadSecret reads a token file (the admin token, a worker's token): its
// first line, trimmed.
func ReadSecret(path string) (string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	line, _, _ := strings.Cut(string(data), "\n")
	line = strings.TrimSpace(line)
	if line == "" {
		return "", errors.New(path + " holds no token")
	}
	return line, nil
}
