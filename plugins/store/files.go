package store

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/mcpkit/mcpkit/pkg/docstore"
	"github.com/mcpkit/mcpkit/pkg/mcpcore"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func (p *Plugin) addFileTools() {
	addTool(p, &mcp.Tool{Name: "backup", Description: "Write a consistent copy of the whole store, taken while writes go on, to a file under the server's files_dir, in the store's own file format (`mcpkit store FILE` opens it). The file is replaced atomically when it exists. Sends progress notifications (bytes written) when the request has a progress token. Returns {path, bytes}.",
		Annotations: &mcp.ToolAnnotations{OpenWorldHint: new(false)}}, p.backup, mcpcore.ToolOptions{Timeout: buildTimeout})
	addTool(p, &mcp.Tool{Name: "dump", Description: `Dump collections (all by default) as JSON Lines, from one consistent snapshot: a header line, then per collection a line with its schema and index definitions and one line per document ({"type":"document","collection":...,"id":...,"doc":...}, in the store's typed JSON form). With path, writes the file under the server's files_dir (replaced atomically) and returns {path, documents, bytes}; without, returns {documents, data} with the JSON Lines as data (a large one is paged: see the result tool). Sends progress notifications (documents) when the request has a progress token.`,
		Annotations: &mcp.ToolAnnotations{OpenWorldHint: new(false)}}, p.dump, mcpcore.ToolOptions{Timeout: buildTimeout})
	addTool(p, &mcp.Tool{Name: "load", Description: "Load a dump (what dump writes): from a file under the server's files_dir (path) or inline JSON Lines (data), exactly one. mode says what to do with a collection of the dump that already exists: refuse (the default: fail when it holds documents), replace (drop its documents, schema and indexes first) or merge (keep them; a document of the dump replaces the one with its id). Documents are written 1000 per transaction and checked against schemas and unique indexes; a load is not atomic: on an error, which names the line, what was loaded before it stays. Sends progress notifications (lines) when the request has a progress token. Returns {collections, documents}.",
		Annotations: &mcp.ToolAnnotations{DestructiveHint: new(true), OpenWorldHint: new(false)}}, p.load, mcpcore.ToolOptions{Timeout: buildTimeout})
}

type backupArgs struct {
	Path filePathArg `json:"path" jsonschema:"the backup file, relative to the server's files_dir, which it may not leave (no absolute path, no \"..\" out of it, no symbolic link out of it)"`
}

// backupReply is backup's result.
type backupReply struct {
	Path  string `json:"path"`
	Bytes int64  `json:"bytes"`
}

func (p *Plugin) backup(ctx context.Context, req *mcp.CallToolRequest, in backupArgs) (any, error) {
	rel, err := p.filePath("/path", string(in.Path), true)
	if err != nil {
		return nil, err
	}
	n, err := backupTo(ctx, p.db, p.files, rel, progressOf(ctx, p.host, req, "bytes written"))
	if err != nil {
		return nil, engineFailure(err, placeAll("/path"))
	}
	return backupReply{Path: filepath.ToSlash(rel), Bytes: n}, nil
}

type dumpArgs struct {
	Collections collectionList `json:"collections,omitempty" jsonschema:"the collections to dump (default: all)"`
	Path        filePathArg    `json:"path,omitempty" jsonschema:"the file to write, relative to the server's files_dir, which it may not leave (no absolute path, no \"..\" out of it, no symbolic link out of it); without it the JSON Lines come back as data"`
}

// dumpReply is dump's result.
type dumpReply struct {
	Path      string  `json:"path,omitempty"`
	Documents int64   `json:"documents"`
	Bytes     int64   `json:"bytes"`
	Data      *string `json:"data,omitempty"`
}

func (p *Plugin) dump(ctx context.Context, req *mcp.CallToolRequest, in dumpArgs) (any, error) {
	colls := make([]string, len(in.Collections))
	for i, c := range in.Collections {
		colls[i] = string(c)
	}
	progress := progressOf(ctx, p.host, req, "documents dumped")
	place := func(e *docstore.Error) string {
		if i := slices.Index(colls, e.Collection); i >= 0 {
			return fmt.Sprintf("/collections/%d", i)
		}
		return "/collections"
	}
	if in.Path != "" {
		rel, err := p.filePath("/path", string(in.Path), true)
		if err != nil {
			return nil, err
		}
		var docs int64
		n, err := writeFile(p.files, rel, func(w io.Writer) (err error) {
			docs, err = p.db.Dump(ctx, w, colls, progress)
			return err
		})
		if err != nil {
			return nil, engineFailure(err, place)
		}
		return dumpReply{Path: filepath.ToSlash(rel), Documents: docs, Bytes: n}, nil
	}
	// Inline, the dump becomes one result, which the core retains for
	// paging when it is large: it must fit in retained_result_bytes.
	out := &cappedBuffer{max: p.host.Limits().RetainedResultBytes}
	docs, err := p.db.Dump(ctx, out, colls, progress)
	if errors.Is(err, errDumpTooLarge) {
		return nil, &mcpcore.LimitError{Limit: "retained_result_bytes", Max: out.max,
			Detail: "the dump is too large to return inline; nothing was returned: give path to write it under files_dir, or dump fewer collections"}
	}
	if err != nil {
		return nil, engineFailure(err, place)
	}
	data := out.buf.String()
	return dumpReply{Documents: docs, Bytes: int64(len(data)), Data: &data}, nil
}

// errDumpTooLarge is a cappedBuffer's write beyond its maximum.
var errDumpTooLarge = errors.New("dump larger than its buffer's maximum")

// cappedBuffer is a buffer that refuses to grow beyond max bytes.
type cappedBuffer struct {
	buf bytes.Buffer
	max int64
}

func (c *cappedBuffer) Write(b []byte) (int, error) {
	if int64(c.buf.Len())+int64(len(b)) > c.max {
		return 0, errDumpTooLarge
	}
	return c.buf.Write(b)
}

type loadArgs struct {
	Path filePathArg `json:"path,omitempty" jsonschema:"the dump file to read, relative to the server's files_dir, which it may not leave (no absolute path, no \"..\" out of it, no symbolic link out of it); or give data"`
	Data *string     `json:"data,omitempty" jsonschema:"the dump as JSON Lines text (what dump returns as data); or give path"`
	Mode loadMode    `json:"mode,omitempty" jsonschema:"what to do with a collection of the dump that exists: refuse (the default) when it holds documents, replace it, or merge into it"`
}

func (p *Plugin) load(ctx context.Context, req *mcp.CallToolRequest, in loadArgs) (any, error) {
	progress := progressOf(ctx, p.host, req, "lines loaded")
	mode := docstore.LoadMode(in.Mode)
	switch {
	case in.Path != "" && in.Data != nil:
		return nil, &mcpcore.ParamError{Path: "/data", Reason: "give path or data, not both"}
	case in.Data != nil:
		st, err := loadFrom(ctx, p.db, strings.NewReader(*in.Data), mode, progress)
		if err != nil {
			return nil, engineFailure(err, placeAll("/data"))
		}
		return st, nil
	case in.Path == "":
		return nil, &mcpcore.ParamError{Reason: "give path (a dump file under files_dir) or data (the dump's JSON Lines)"}
	}
	rel, err := p.filePath("/path", string(in.Path), false)
	if err != nil {
		return nil, err
	}
	f, err := p.files.Open(rel)
	if err != nil {
		return nil, fmt.Errorf("open %s in files_dir: %w", rel, err)
	}
	defer f.Close()
	st, err := loadFrom(ctx, p.db, f, mode, progress)
	if err != nil {
		return nil, engineFailure(err, placeAll("/path"))
	}
	return st, nil
}

// filePath checks rel, the argument at JSON Pointer arg, against
// files_dir and returns it relative to files_dir with its symbolic links
// resolved. It must be a local path (not absolute, not leading out with
// ".."), and its location with every link resolved must stay inside
// files_dir: for a read, the file's (which must exist and be a regular
// file); for a write, its directory's (which must exist: the file itself
// is replaced by a rename, never written through a link). Anything else is
// a [*mcpcore.ParamError]. The file is then opened through os.Root, which
// refuses a link that leaves files_dir too, should one appear meanwhile.
func (p *Plugin) filePath(arg, rel string, write bool) (string, error) {
	if p.files == nil {
		return "", &mcpcore.ParamError{Path: arg, Reason: "this server has no files_dir configured (plugins.store.config.files_dir, or --files-dir), so it reads and writes no file: dump and load take their data inline"}
	}
	if !filepath.IsLocal(rel) {
		return "", &mcpcore.ParamError{Path: arg, Reason: fmt.Sprintf("%q is not a relative path inside files_dir (no absolute path, no \"..\" out of it)", rel)}
	}
	rel = filepath.Clean(rel)
	at := filepath.Join(p.cfg.filesDir, rel)
	if write {
		if fi, err := os.Stat(at); err == nil && fi.IsDir() {
			return "", &mcpcore.ParamError{Path: arg, Reason: fmt.Sprintf("%q is a directory", rel)}
		}
		at = filepath.Dir(at)
	}
	resolved, err := filepath.EvalSymlinks(at)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		what := "file"
		if write {
			what = "directory"
		}
		return "", &mcpcore.ParamError{Path: arg, Reason: fmt.Sprintf("no such %s in files_dir: %s", what, filepath.ToSlash(rel))}
	case err != nil:
		return "", fmt.Errorf("resolve %s in files_dir: %w", rel, err)
	}
	if inside, err := filepath.Rel(p.cfg.filesDir, resolved); err != nil || inside != "." && !filepath.IsLocal(inside) {
		return "", &mcpcore.ParamError{Path: arg, Reason: fmt.Sprintf("%q leads outside files_dir through a symbolic link", rel)}
	}
	if fi, err := os.Stat(resolved); !write && err == nil && !fi.Mode().IsRegular() {
		return "", &mcpcore.ParamError{Path: arg, Reason: fmt.Sprintf("%q is not a regular file", rel)}
	}
	// The path without links, for os.Root (which refuses an absolute link
	// even when it stays inside).
	real, _ := filepath.Rel(p.cfg.filesDir, resolved)
	if write {
		real = filepath.Join(real, filepath.Base(rel))
	}
	return real, nil
}

// fileSystem is where backup and dump write: files_dir through an
// os.Root for the tools, the operator's own paths for the command line.
type fileSystem interface {
	OpenFile(name string, flag int, perm os.FileMode) (*os.File, error)
	Rename(oldname, newname string) error
	Remove(name string) error
}

// hostFiles is the operator's file system, for the command line.
type hostFiles struct{}

func (hostFiles) OpenFile(name string, flag int, perm os.FileMode) (*os.File, error) {
	return os.OpenFile(name, flag, perm)
}
func (hostFiles) Rename(oldname, newname string) error { return os.Rename(oldname, newname) }
func (hostFiles) Remove(name string) error             { return os.Remove(name) }

var (
	_ fileSystem = (*os.Root)(nil)
	_ fileSystem = hostFiles{}
)

// writeFile writes name in fsys atomically, with write: into a new
// temporary file beside it, synced, then renamed over name (a symbolic
// link at name is replaced, not followed). It returns the file's size; on
// an error the temporary file is removed and name is untouched.
func writeFile(fsys fileSystem, name string, write func(io.Writer) error) (int64, error) {
	var suffix [8]byte
	rand.Read(suffix[:])
	dir, base := filepath.Split(name)
	tmp := filepath.Join(dir, "."+base+".tmp-"+hex.EncodeToString(suffix[:]))
	f, err := fsys.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return 0, fmt.Errorf("create %s: %w", name, err)
	}
	err = write(f)
	var size int64
	if err == nil {
		err = f.Sync()
	}
	if err == nil {
		var fi os.FileInfo
		if fi, err = f.Stat(); err == nil {
			size = fi.Size()
		}
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = fsys.Rename(tmp, name)
	}
	if err != nil {
		fsys.Remove(tmp)
		return 0, fmt.Errorf("write %s: %w", name, err)
	}
	return size, nil
}

// backupTo writes a backup of db to name in fsys, reporting the bytes
// written to progress (the total is known only at the end: a store file's
// size is not its backup's), and returns its size.
func backupTo(ctx context.Context, db *docstore.Store, fsys fileSystem, name string, progress docstore.Progress) (int64, error) {
	n, err := writeFile(fsys, name, func(w io.Writer) error {
		_, err := db.Backup(ctx, &countingWriter{w: w, progress: progress})
		return err
	})
	if err == nil && progress != nil {
		progress(n, n)
	}
	return n, err
}

// countingWriter reports the bytes written through it to progress (nil:
// none), against an unknown total. It reports at each write the bytes
// written before it, so that the caller's report of the end, with the
// total, is always the largest (progress must increase).
type countingWriter struct {
	w        io.Writer
	n        int64
	progress docstore.Progress
}

func (c *countingWriter) Write(b []byte) (int, error) {
	if c.progress != nil && c.n > 0 {
		c.progress(c.n, 0)
	}
	n, err := c.w.Write(b)
	c.n += int64(n)
	return n, err
}

// loadFrom loads the dump r into db, having counted its lines for
// progress, which reports lines read.
func loadFrom(ctx context.Context, db *docstore.Store, r io.ReadSeeker, mode docstore.LoadMode, progress docstore.Progress) (docstore.LoadStats, error) {
	var lines int64
	if progress != nil {
		var err error
		if lines, err = countLines(r); err != nil {
			return docstore.LoadStats{}, fmt.Errorf("read the dump: %w", err)
		}
		if _, err := r.Seek(0, io.SeekStart); err != nil {
			return docstore.LoadStats{}, fmt.Errorf("read the dump: %w", err)
		}
	}
	return db.Load(ctx, r, mode, lines, progress)
}

// countLines counts the lines of r: its newlines, and a last line without
// one.
func countLines(r io.Reader) (int64, error) {
	buf := make([]byte, 64<<10)
	var n int64
	last := byte('\n')
	for {
		k, err := r.Read(buf)
		if k > 0 {
			n += int64(bytes.Count(buf[:k], []byte{'\n'}))
			last = buf[k-1]
		}
		if err == io.EOF {
			if last != '\n' {
				n++
			}
			return n, nil
		}
		if err != nil {
			return n, err
		}
	}
}
