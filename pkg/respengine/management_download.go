package respengine

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// download is a checked download destination: a new file below file_root.
type download struct {
	root string // file_root as configured (absolute)
	rel  string // the file, relative to the root, cleaned
	max  int64
}

// prepareDownload checks a download before anything is sent: file_root is
// configured; path is relative, or absolute beneath the root as configured
// or as its canonical path; every directory on the way exists and is not
// a symlink (even one pointing back inside the root); the file does not
// exist; max is within the download_bytes limit.
func (m *Management) prepareDownload(path string, max int64) (*download, error) {
	bad := func(arg, reason string) error { return &ArgError{Arg: arg, Reason: reason} }
	root := m.opts.FileRoot
	if root == "" {
		return nil, bad("download_path", "downloads need file_root in the configuration")
	}
	if path == "" {
		return nil, bad("download_path", "max_download_bytes goes with download_path")
	}
	limit := m.opts.MaxDownloadBytes
	switch {
	case max == 0:
		max = limit
	case max < 0 || max > limit:
		return nil, bad("max_download_bytes", fmt.Sprintf("%d is outside [1, %d] (the download_bytes limit)", max, limit))
	}
	rel, err := relativeToRoot(root, path)
	if err != nil {
		return nil, bad("download_path", err.Error())
	}
	d := &download{root: root, rel: rel, max: max}
	if err := d.check(); err != nil {
		return nil, bad("download_path", err.Error())
	}
	return d, nil
}

// relativeToRoot returns path relative to root: a relative path must stay
// below it; an absolute one must lie beneath root or beneath its canonical
// path (an operator's root alias such as macOS /tmp).
func relativeToRoot(root, path string) (string, error) {
	var rel string
	if filepath.IsAbs(path) {
		clean := filepath.Clean(path)
		bases := []string{root}
		if canon, err := filepath.EvalSymlinks(root); err == nil && canon != root {
			bases = append(bases, canon)
		}
		for _, b := range bases {
			if r, err := filepath.Rel(b, clean); err == nil && filepath.IsLocal(r) {
				rel = r
				break
			}
		}
		if rel == "" {
			return "", fmt.Errorf("%s is not beneath file_root %s", path, root)
		}
	} else {
		if !filepath.IsLocal(path) {
			return "", fmt.Errorf("%q leaves file_root (no .., no empty or reserved names)", path)
		}
		rel = filepath.Clean(path)
	}
	return rel, nil
}

// check refuses a destination whose directories are missing or symlinks,
// or that exists (as anything, a symlink included).
func (d *download) check() error {
	r, err := os.OpenRoot(d.root)
	if err != nil {
		return fmt.Errorf("file_root: %w", err)
	}
	defer r.Close()
	parts := strings.Split(d.rel, string(filepath.Separator))
	for i := 1; i < len(parts); i++ {
		dir := filepath.Join(parts[:i]...)
		fi, err := r.Lstat(dir)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return fmt.Errorf("directory %s does not exist below file_root (downloads create files, not directories)", dir)
		case err != nil:
			return fmt.Errorf("%s: %w", dir, err)
		case fi.Mode()&fs.ModeSymlink != 0:
			return fmt.Errorf("%s is a symlink: downloads never pass through symlinks below file_root", dir)
		case !fi.IsDir():
			return fmt.Errorf("%s is not a directory", dir)
		}
	}
	if _, err := r.Lstat(d.rel); err == nil {
		return fmt.Errorf("%s exists (a download only creates a new file)", d.rel)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%s: %w", d.rel, err)
	}
	return nil
}

// write streams body into the new file and returns its size and SHA-256.
// The file is created exclusively (an existing file or symlink fails);
// on any failure, cancellation or a body over max, it is removed.
func (d *download) write(ctx context.Context, body io.Reader, contentLength int64) (info *DownloadInfo, err error) {
	if contentLength > d.max {
		return nil, &LimitError{Limit: LimitDownloadBytes, Max: d.max, Actual: contentLength, Detail: "the response announces a larger body; no file was created"}
	}
	if err := d.check(); err != nil { // again: the directories may have changed since the request was checked
		return nil, &ArgError{Arg: "download_path", Reason: err.Error()}
	}
	r, err := os.OpenRoot(d.root)
	if err != nil {
		return nil, fmt.Errorf("file_root: %w", err)
	}
	defer r.Close()
	f, err := r.OpenFile(d.rel, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, &ArgError{Arg: "download_path", Reason: fmt.Sprintf("create %s: %v", d.rel, err)}
	}
	defer func() {
		if cerr := f.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("close %s: %w", d.rel, cerr)
		}
		if err != nil {
			r.Remove(d.rel)
		}
	}()
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(f, h), io.LimitReader(body, d.max+1))
	switch {
	case ctx.Err() != nil:
		return nil, ctx.Err()
	case err != nil:
		return nil, errorf(ErrConnectionLost, "download to %s: %v (the partial file was removed)", d.rel, err)
	case n > d.max:
		return nil, &LimitError{Limit: LimitDownloadBytes, Max: d.max, Detail: "the body is larger; the partial file was removed"}
	case contentLength >= 0 && n != contentLength:
		return nil, errorf(ErrConnectionLost, "download to %s: %d of %d bytes arrived (the partial file was removed)", d.rel, n, contentLength)
	}
	if err := f.Sync(); err != nil {
		return nil, fmt.Errorf("sync %s: %w", d.rel, err)
	}
	return &DownloadInfo{Path: filepath.Join(d.root, d.rel), Bytes: n, SHA256: hex.EncodeToString(h.Sum(nil))}, nil
}
