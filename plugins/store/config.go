package store

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/mcpkit/mcpkit/pkg/docstore/kv"
	"github.com/mcpkit/mcpkit/pkg/mcpcore"
)

// Config is the plugin's configuration, under "plugins.store.config" in an
// `mcpkit serve` file. It is decoded strictly (an unknown field is an
// error); relative paths are resolved from the working directory.
type Config struct {
	// Path is the store's bbolt file, created when absent, or a
	// PostgreSQL URL (postgres://USER@HOST:PORT/DB?sslmode=...&mcpkit_store=NAME;
	// the password from PGPASSWORD or a password file rather than the URL),
	// which any number of instances may serve at once; omitted or "" serves
	// an in-memory store, lost at exit.
	Path string `json:"path,omitempty"`
	// FilesDir is the existing directory that backup, dump and load may
	// read and write, by paths relative to it; without it those tools take
	// no path (dump returns its data inline, load takes data inline).
	FilesDir string `json:"files_dir,omitempty"`
}

// settings is the resolved configuration the plugin runs with.
type settings struct {
	path string // absolute, a PostgreSQL URL, or "" in memory
	// filesDir is absolute with every symbolic link resolved, so that a
	// file's resolved path can be checked against it; "" for none.
	filesDir string
}

// parseConfig decodes raw strictly and resolves it, so that every mistake
// stops the start with a [*mcpcore.ConfigError] naming the field.
func parseConfig(raw []byte) (*settings, error) {
	var c Config
	if err := mcpcore.DecodeConfig(raw, &c); err != nil {
		return nil, err
	}
	return c.resolve()
}

func (c Config) resolve() (*settings, error) {
	s := &settings{}
	if kv.IsURL(c.Path) {
		s.path = c.Path
	} else if c.Path != "" {
		p, err := filepath.Abs(c.Path)
		if err != nil {
			return nil, &mcpcore.ConfigError{Field: "path", Reason: fmt.Sprintf("cannot resolve %s: %v", c.Path, err)}
		}
		if fi, err := os.Stat(p); err == nil && fi.IsDir() {
			return nil, &mcpcore.ConfigError{Field: "path", Reason: fmt.Sprintf("%s is a directory, not a store file", p)}
		}
		s.path = p
	}
	if c.FilesDir != "" {
		dir, err := filepath.Abs(c.FilesDir)
		if err == nil {
			dir, err = filepath.EvalSymlinks(dir)
		}
		if err != nil {
			return nil, &mcpcore.ConfigError{Field: "files_dir", Reason: fmt.Sprintf("cannot resolve %s: %v", c.FilesDir, err)}
		}
		if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
			return nil, &mcpcore.ConfigError{Field: "files_dir", Reason: fmt.Sprintf("%s is not an existing directory", dir)}
		}
		s.filesDir = dir
	}
	return s, nil
}
