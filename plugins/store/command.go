package store

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"time"

	"github.com/mcpkit/mcpkit/pkg/cli"
	"github.com/mcpkit/mcpkit/pkg/docstore"
	"github.com/mcpkit/mcpkit/pkg/docstore/kv"
	"github.com/mcpkit/mcpkit/pkg/mcpcore"
	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// Names of the command's own flags.
const (
	flagFilesDir   = "files-dir"
	flagToolPrefix = "tool-prefix"
	flagStdio      = "stdio"
	flagHTTP       = "http"
	flagOut        = "out"
	flagIn         = "in"
	flagMode       = "mode"
	flagCollection = "collection"
)

const commandDoc = `Serves the document store plugin alone: what an MCP client launches to reach
one store. PATH is the store's file (created when absent), or a PostgreSQL URL
(postgres://USER@HOST:PORT/DB?sslmode=...; &mcpkit_store=NAME picks one of
several stores in the database; the password from PGPASSWORD or a password
file), which any number of processes may serve at once; without PATH the store
is in memory and lost at exit. The tools keep corvid-mcp's names (store, get,
page, ...); --tool-prefix P names them P_store, P_get, ... --files-dir DIR lets
backup, dump and load read and write files under DIR, and nowhere else (without
it, dump and load take their data inline). Over stdio by default; --http ADDR
serves streamable HTTP on loopback (for tokens and TLS use 'mcpkit serve
--plugins store --config').

The verbs run one operation on a store file and exit. They open the file
themselves, so no server may hold it open (a held file fails at once):

  dump PATH [--out FILE] [--collection C]...
        the collections (all by default; repeat --collection) as JSON Lines,
        to FILE (replaced atomically) or stdout
  load PATH --in FILE [--mode refuse|replace|merge]
        a dump into the store (created when absent); mode says what to do with
        a collection that exists: refuse (the default) when it holds documents
  backup PATH --out FILE
        a consistent copy of the store in its own file format (atomically)
  verify PATH
        checks the store for damage: its pages, bbolt's own consistency
        check, then every document and index; lists what is damaged
  copy PATH TO
        the store at PATH into a new store at TO, as it is (indexes and
        search structures copied, not rebuilt): a file to PostgreSQL, or back

They show a progress bar on stderr when it is a terminal, and plain progress
lines otherwise. A store file named like a verb is given as ./dump. dump,
backup and verify only read PATH: it must exist and be a store file.

Every open checks what it reads of the file first (its meta pages, its length,
the free page list, the top-level pages): a store file damaged there (truncated,
a page overwritten), empty where it must exist, or not a store file is refused
with what is wrong, and nothing is done or served (exit 3). Damage deeper in
the file is found when something reaches it: a verb that meets it stops
(exit 3); a server fails the calls that meet it, and every write, with error
kind "damaged", and stays up.`

func init() {
	cli.RegisterCommand(cli.Command{
		Name:    "store",
		Summary: "serve the document store alone (a file, or memory), over stdio by default; or dump, load, back up, verify or copy a store",
		Usage:   "[--files-dir DIR] [--tool-prefix P] [--stdio | --http ADDR] [--log-level L] [--log-format F] [PATH]\n       mcpkit store dump PATH [--out FILE] [--collection C]...\n       mcpkit store load PATH --in FILE [--mode M]\n       mcpkit store backup PATH --out FILE\n       mcpkit store verify PATH\n       mcpkit store copy PATH TO",
		Doc:     commandDoc,
		Flags: func(fs *flag.FlagSet) {
			fs.String(flagFilesDir, "", "the existing `directory` backup, dump and load may read and write")
			fs.String(flagToolPrefix, "", "tool `prefix` (default none: store, get, page, ...)")
			fs.Bool(flagStdio, false, "serve MCP over stdin/stdout (the default)")
			fs.String(flagHTTP, "", "serve streamable HTTP at `ADDR` (loopback)")
			cli.AddLogFlags(fs)
		},
		Run: runCommand,
	})
}

// verbs are the command's operations on a store file.
var verbs = map[string]func(ctx context.Context, env *cli.Env, args []string) error{
	"dump":   runDump,
	"load":   runLoad,
	"backup": runBackup,
	"verify": runVerify,
	"copy":   runCopy,
}

func runCommand(ctx context.Context, env *cli.Env) int {
	if len(env.Args) > 0 {
		if run, ok := verbs[env.Args[0]]; ok {
			err := run(ctx, env, env.Args[1:])
			var fe *fileError
			if errors.Is(err, docstore.ErrDamaged) && !errors.As(err, &fe) {
				// Damage met after the open (see docs/store.md): the file's too.
				err = &fileError{err: err}
			}
			switch {
			case errors.Is(err, flag.ErrHelp):
				return cli.ExitOK
			case errors.As(err, &fe):
				msg := "store " + env.Args[0] + " refused"
				if env.Args[0] == "verify" && errors.Is(err, docstore.ErrDamaged) {
					msg = "store verify found damage"
				}
				env.Logger.Error(msg, "err", fe)
				return cli.ExitConfig
			}
			return env.Fail(err)
		}
	}
	args, err := parseInterleaved(env.Flags, env.Args)
	if err != nil {
		return env.Fail(cli.Usagef("%v", err))
	}
	if len(args) > 1 {
		return env.Fail(cli.Usagef("unexpected argument %q (one store file at most)", args[1]))
	}
	stdio, _ := cli.FlagValue[bool](env.Flags, flagStdio)
	httpAddr, _ := cli.FlagValue[string](env.Flags, flagHTTP)
	addr, from, err := cli.ChooseTransport(stdio, httpAddr, "")
	if err != nil {
		return env.Fail(err)
	}
	var path string
	if len(args) == 1 {
		path = args[0]
	}
	filesDir, _ := cli.FlagValue[string](env.Flags, flagFilesDir)
	prefix, _ := cli.FlagValue[string](env.Flags, flagToolPrefix)
	opts, err := commandOptions(Config{Path: path, FilesDir: filesDir}, prefix)
	if err != nil {
		return env.Fail(err)
	}
	opts.Logger = env.Logger
	return cli.Serve(ctx, cli.ServeParams{Options: opts, HTTPAddr: addr, TransportFrom: from, Stdin: env.Stdin, Stdout: env.Stdout})
}

// commandOptions builds the server options of `mcpkit store`: the plugin
// alone, with its configuration and tool prefix.
func commandOptions(c Config, prefix string) (mcpcore.Options, error) {
	raw, err := json.Marshal(c)
	if err != nil {
		return mcpcore.Options{}, err
	}
	cfg := mcpcore.DefaultConfig()
	cfg.Plugins = map[string]mcpcore.PluginConfig{"store": {Prefix: &prefix, Config: raw}}
	if err := cfg.Validate(); err != nil {
		return mcpcore.Options{}, err
	}
	return mcpcore.Options{Config: cfg, Plugins: []string{"store"}}, nil
}

// parseInterleaved parses fs's flags wherever they stand among args and
// returns the other arguments in order; those after "--" are never flags.
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var rest, after []string
	if i := slices.Index(args, "--"); i >= 0 {
		args, after = args[:i], args[i+1:]
	}
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		args = fs.Args()
		if len(args) == 0 {
			return append(rest, after...), nil
		}
		rest, args = append(rest, args[0]), args[1:]
	}
}

// verbFlags parses a verb's command line: its flags (defined by define)
// and the store file, which must be the one other argument. Its errors
// are usage errors; -h and --help print the verb's flags to stdout and
// return flag.ErrHelp.
func verbFlags(env *cli.Env, verb string, args []string, define func(fs *flag.FlagSet)) (string, error) {
	fs := flag.NewFlagSet("mcpkit store "+verb, flag.ContinueOnError)
	fs.SetOutput(env.Stderr)
	define(fs)
	fs.Usage = func() {}
	rest, err := parseInterleaved(fs, args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		fmt.Fprintf(env.Stdout, "Usage of mcpkit store %s (see 'mcpkit help store'):\n", verb)
		fs.SetOutput(env.Stdout)
		fs.PrintDefaults()
		return "", err
	case err != nil:
		return "", cli.Usagef("%s: %v", verb, err)
	case len(rest) == 0:
		return "", cli.Usagef("%s: give the store file", verb)
	case len(rest) > 1:
		return "", cli.Usagef("%s: unexpected argument %q", verb, rest[1])
	}
	return rest[0], nil
}

// openReadOnly opens the store file at path read-only, for the verbs
// that only read it: it must exist and be a store file (an empty file
// too is refused), and is never written.
func openReadOnly(path string) (*docstore.Store, error) {
	if err := mustExist(path); err != nil {
		return nil, err
	}
	db, err := docstore.Open(path, docstore.Options{ReadOnly: true})
	return db, asFileError(err)
}

// mustExist refuses a store file that does not exist, where a verb only
// reads it (a PostgreSQL store's absence is found when it opens).
func mustExist(path string) error {
	if kv.IsURL(path) {
		return nil
	}
	if _, err := os.Stat(path); err != nil {
		return &fileError{err: fmt.Errorf("no store file: %w", err)}
	}
	return nil
}

// withStore runs fn on the store opened by open and closes it.
func withStore(open func() (*docstore.Store, error), fn func(db *docstore.Store) error) error {
	db, err := open()
	if err != nil {
		return err
	}
	err = fn(db)
	if cerr := db.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("close the store: %w", cerr)
	}
	return err
}

func runDump(ctx context.Context, env *cli.Env, args []string) error {
	var out string
	var colls []string
	path, err := verbFlags(env, "dump", args, func(fs *flag.FlagSet) {
		fs.StringVar(&out, flagOut, "", "write the dump to `FILE` (replaced atomically; default stdout)")
		fs.Func(flagCollection, "dump `collection` C (repeat for several; default all)", func(s string) error {
			colls = append(colls, s)
			return nil
		})
	})
	if err != nil {
		return err
	}
	return withStore(func() (*docstore.Store, error) { return openReadOnly(path) }, func(db *docstore.Store) error {
		show := newProgressDisplay(env.Stderr, "dump", "documents")
		var docs, size int64
		var err error
		if out == "" {
			docs, err = db.Dump(ctx, env.Stdout, colls, show.report)
		} else {
			size, err = writeFile(hostFiles{}, out, func(w io.Writer) (err error) {
				docs, err = db.Dump(ctx, w, colls, show.report)
				return err
			})
		}
		show.finish()
		if err != nil {
			return fmt.Errorf("dump %s: %w", kv.Redact(path), err)
		}
		if out != "" {
			fmt.Fprintf(env.Stderr, "dumped %d documents to %s (%d bytes)\n", docs, out, size)
		} else {
			fmt.Fprintf(env.Stderr, "dumped %d documents\n", docs)
		}
		return nil
	})
}

func runLoad(ctx context.Context, env *cli.Env, args []string) error {
	var in, mode string
	path, err := verbFlags(env, "load", args, func(fs *flag.FlagSet) {
		fs.StringVar(&in, flagIn, "", "the dump `FILE` to load (required)")
		fs.StringVar(&mode, flagMode, string(docstore.LoadRefuse), "what to do with a collection that exists: refuse (when it holds documents), replace or merge")
	})
	if err != nil {
		return err
	}
	if in == "" {
		return cli.Usagef("load: give the dump with --in FILE")
	}
	if !slices.Contains(loadModes, any(mode)) {
		return cli.Usagef("load: --mode %q: want refuse, replace or merge", mode)
	}
	f, err := os.Open(in)
	if err != nil {
		return fmt.Errorf("load: %w", err)
	}
	defer f.Close()
	open := func() (*docstore.Store, error) {
		db, err := docstore.Open(path, docstore.Options{})
		return db, asFileError(err)
	}
	return withStore(open, func(db *docstore.Store) error {
		show := newProgressDisplay(env.Stderr, "load", "lines")
		st, err := loadFrom(ctx, db, f, docstore.LoadMode(mode), show.report)
		show.finish()
		if err != nil {
			return fmt.Errorf("load %s into %s: %w", in, kv.Redact(path), err)
		}
		fmt.Fprintf(env.Stderr, "loaded %d documents in %d collections\n", st.Documents, st.Collections)
		return nil
	})
}

func runBackup(ctx context.Context, env *cli.Env, args []string) error {
	var out string
	path, err := verbFlags(env, "backup", args, func(fs *flag.FlagSet) {
		fs.StringVar(&out, flagOut, "", "the backup `FILE` to write (replaced atomically; required)")
	})
	if err != nil {
		return err
	}
	if out == "" {
		return cli.Usagef("backup: give the backup file with --out FILE")
	}
	return withStore(func() (*docstore.Store, error) { return openReadOnly(path) }, func(db *docstore.Store) error {
		show := newProgressDisplay(env.Stderr, "backup", "bytes")
		n, err := backupTo(ctx, db, hostFiles{}, out, show.report)
		show.finish()
		if err != nil {
			return fmt.Errorf("back up %s: %w", kv.Redact(path), err)
		}
		fmt.Fprintf(env.Stderr, "backed up %s to %s (%d bytes)\n", kv.Redact(path), out, n)
		return nil
	})
}

// runVerify checks the store file for damage (see docstore's CheckFile
// and Verify) and reports on stdout: that it is sound, or what is
// damaged, one problem a line (then exit 3).
func runVerify(ctx context.Context, env *cli.Env, args []string) error {
	path, err := verbFlags(env, "verify", args, func(*flag.FlagSet) {})
	if err != nil {
		return err
	}
	err = withStore(func() (*docstore.Store, error) { return openReadOnly(path) }, func(db *docstore.Store) error {
		if err := db.CheckFile(); err != nil {
			return asFileError(err)
		}
		err := db.Verify(ctx)
		if err == nil || ctx.Err() != nil || errors.Is(err, docstore.ErrDamaged) || docstore.ErrorCode(err) == docstore.CodeClosed {
			return asFileError(err)
		}
		// Documents and indexes that disagree: damage to what the pages hold.
		return &fileError{err: &docstore.DamageError{Path: kv.Redact(path), Problems: []string{err.Error()}}}
	})
	var de *docstore.DamageError
	switch {
	case err == nil:
		checked := "pages, bbolt's consistency check, documents and indexes"
		if kv.IsURL(path) {
			checked = "tables, documents and indexes"
		}
		fmt.Fprintf(env.Stdout, "%s: no damage found (%s)\n", kv.Redact(path), checked)
	case errors.As(err, &de):
		fmt.Fprintf(env.Stdout, "%s: damaged\n", kv.Redact(path))
		for _, p := range de.Problems {
			fmt.Fprintf(env.Stdout, "  %s\n", p)
		}
		if de.More > 0 {
			fmt.Fprintf(env.Stdout, "  and %d more problems\n", de.More)
		}
	}
	return err
}

// runCopy copies the store at PATH into a new store at TO (docstore.Copy).
func runCopy(ctx context.Context, env *cli.Env, args []string) error {
	fs := flag.NewFlagSet("copy", flag.ContinueOnError)
	fs.SetOutput(env.Stderr)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 2 {
		return cli.Usagef("copy: give the store to copy and the new store: copy PATH TO")
	}
	from, to := fs.Arg(0), fs.Arg(1)
	if err := mustExist(from); err != nil {
		return err
	}
	n, err := docstore.Copy(to, from)
	if err != nil {
		return asFileError(err)
	}
	fmt.Fprintf(env.Stderr, "copied %s to %s (%d keys)\n", kv.Redact(from), kv.Redact(to), n)
	return nil
}

// lineEvery is the least time between two plain progress lines.
const lineEvery = time.Second

// progressDisplay shows a command-line operation's progress on w: a bar
// when w is a terminal, plain lines ("dump: 2048/10000 documents") at most
// once a second otherwise, and the last count always.
type progressDisplay struct {
	w          io.Writer
	what, unit string
	tty        bool
	bar        *progressbar.ProgressBar
	last       time.Time
	done       int64 // the last count reported
	shown      int64 // the last count shown on a plain line (-1: none)
	total      int64
}

func newProgressDisplay(w io.Writer, what, unit string) *progressDisplay {
	f, ok := w.(*os.File)
	return &progressDisplay{w: w, what: what, unit: unit, tty: ok && term.IsTerminal(int(f.Fd())), shown: -1}
}

// report is a docstore.Progress.
func (d *progressDisplay) report(done, total int64) {
	d.done = done
	if total > 0 {
		d.total = total
	}
	if d.tty {
		d.showBar()
		return
	}
	if now := time.Now(); now.Sub(d.last) >= lineEvery {
		d.last = now
		d.line()
	}
}

// showBar draws the bar, made at the first report (its length unknown
// until a total is reported).
func (d *progressDisplay) showBar() {
	if d.bar == nil {
		n := d.total
		if n == 0 {
			n = -1 // unknown: a count without a bar
		}
		d.bar = progressbar.NewOptions64(n,
			progressbar.OptionSetWriter(d.w),
			progressbar.OptionSetDescription(d.what),
			progressbar.OptionShowCount(),
			progressbar.OptionShowBytes(d.unit == "bytes"),
			progressbar.OptionSetItsString(d.unit),
			progressbar.OptionThrottle(100*time.Millisecond),
			// No spinner goroutine: the bar is drawn by reports only.
			progressbar.OptionSetSpinnerChangeInterval(0),
		)
	}
	if d.total > 0 && d.bar.GetMax64() != d.total {
		d.bar.ChangeMax64(d.total)
	}
	d.bar.Set64(d.done)
}

// line prints the count as a plain line.
func (d *progressDisplay) line() {
	if d.done == d.shown {
		return
	}
	d.shown = d.done
	if d.total > 0 {
		fmt.Fprintf(d.w, "%s: %d/%d %s\n", d.what, d.done, d.total, d.unit)
		return
	}
	fmt.Fprintf(d.w, "%s: %d %s\n", d.what, d.done, d.unit)
}

// finish shows the last count: the bar left as it stands (complete only
// if the work was), or a last plain line.
func (d *progressDisplay) finish() {
	if d.bar != nil {
		d.bar.Exit()
		fmt.Fprintln(d.w)
		return
	}
	if !d.tty {
		d.line()
	}
}
