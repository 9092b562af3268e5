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

// CheckerName is the RDB checker's name: the server binary run under it
// (argv[0]) is its own offline RDB checker, as redis-check-rdb is.
const CheckerName = "redis-check-rdb"

// RestoredFile is the name restore gives the RDB in the new data directory
// (the server's default dbfilename).
const RestoredFile = "dump.rdb"

// HelpRestore is the argument of Help that selects the RDB checker's usage.
const HelpRestore = "restore"

// Help runs the server's help, or with args ["restore"] the RDB checker's
// usage (which it prints, exiting 1, when given no file). The reply's
// Success says whether the usage came out.
func (ps *Processes) Help(ctx context.Context, args []string) (ProgramReply, error) {
	bin, err := ps.binary()
	if err != nil {
		return ProgramReply{}, err
	}
	var reply ProgramReply
	switch {
	case len(args) == 0:
		if reply, err = ps.runProgram(ctx, bin, bin, []string{"--help"}); err != nil {
			return ProgramReply{}, err
		}
		reply.Note = "start {args} accepts every argument shown here; the first may be a configuration file"
	case len(args) == 1 && args[0] == HelpRestore:
		// The checker has no help option: its usage is what it prints when
		// given no file.
		if reply, err = ps.runProgram(ctx, bin, CheckerName, nil); err != nil {
			return ProgramReply{}, err
		}
		reply.Note = "restore {source, data_dir} creates data_dir (which must not exist), copies source into it as " + RestoredFile +
			", then runs this checker on the copy; a failed check removes data_dir again"
	default:
		return ProgramReply{}, &ArgError{Arg: "args", Reason: `help takes no args, or ["restore"]`}
	}
	// Both print their usage and exit 1 (redis-server's --help included):
	// help succeeded when the usage came out.
	reply.Success = reply.Success || reply.ExitCode == 1 && strings.Contains(reply.Output, "Usage")
	return reply, nil
}

// Restore places the RDB file source in the new data directory dataDir
// (an existing one is refused: [ErrRefused]) and verifies the placed copy
// with the server's checker; a copy that fails the check is removed with
// the directory Restore created, and the reply's Success is false.
func (ps *Processes) Restore(ctx context.Context, source, dataDir string) (RestoreReply, error) {
	switch {
	case source == "":
		return RestoreReply{}, &ArgError{Arg: "source", Reason: "restore needs the RDB file to restore"}
	case dataDir == "":
		return RestoreReply{}, &ArgError{Arg: "data_dir", Reason: "restore needs the new data directory"}
	}
	bin, err := ps.binary()
	if err != nil {
		return RestoreReply{}, err
	}
	src, err := filepath.Abs(source)
	if err != nil {
		return RestoreReply{}, &ArgError{Arg: "source", Reason: err.Error()}
	}
	dir, err := filepath.Abs(dataDir)
	if err != nil {
		return RestoreReply{}, &ArgError{Arg: "data_dir", Reason: err.Error()}
	}
	if fi, err := os.Stat(src); err != nil || !fi.Mode().IsRegular() {
		reason := "not a regular file"
		if err != nil {
			reason = err.Error()
		}
		return RestoreReply{}, &ArgError{Arg: "source", Reason: fmt.Sprintf("%s: %s; nothing was written", src, reason)}
	}
	if err := os.Mkdir(dir, 0o700); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return RestoreReply{}, errorf(ErrRefused, "data_dir %s already exists: restore places the RDB in a new directory only; nothing was written", dir)
		}
		return RestoreReply{}, fmt.Errorf("restore: create data_dir: %w; nothing was written", err)
	}
	file := filepath.Join(dir, RestoredFile)
	n, sum, err := copyFile(ctx, src, file)
	if err != nil {
		removeRestore(file, dir)
		return RestoreReply{}, fmt.Errorf("restore: copy %s into %s: %w; data_dir was removed again", src, dir, err)
	}
	reply := RestoreReply{Source: src, DataDir: dir}
	reply.ProgramReply, err = ps.runProgram(ctx, bin, CheckerName, []string{file})
	if err != nil || !reply.Success {
		removeRestore(file, dir)
		if err != nil {
			return RestoreReply{}, fmt.Errorf("restore: check %s: %w; data_dir was removed again", file, err)
		}
		reply.Note = "the checker refused the file: data_dir was removed again"
		return reply, nil
	}
	reply.File, reply.Bytes, reply.SHA256 = file, n, sum
	reply.StartArgs = []string{"--dir", dir, "--dbfilename", RestoredFile}
	reply.Note = "start a server on the restored data with start_args and the rest of its configuration"
	return reply, nil
}

// copyFile copies src to the new file dst (never an existing one),
// synced, and returns its size and SHA-256. ctx ends the copy between
// chunks.
func copyFile(ctx context.Context, src, dst string) (int64, string, error) {
	in, err := os.Open(src)
	if err != nil {
		return 0, "", err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return 0, "", err
	}
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(out, h), ctxReader{ctx, in})
	if err == nil {
		err = out.Sync()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return n, hex.EncodeToString(h.Sum(nil)), err
}

// ctxReader fails its next Read once ctx has ended.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, context.Cause(c.ctx)
	}
	return c.r.Read(p)
}

// removeRestore removes what restore created, and only that.
func removeRestore(file, dir string) {
	os.Remove(file)
	os.Remove(dir)
}
