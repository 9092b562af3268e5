// Package hnswlibpeer runs hnswlib, the C++ reference HNSW library (Debian's
// header-only libhnswlib-dev), as the reference peer of BenchmarkStoreVector's
// HNSW build: a small program (cpp/peer.cc) compiled with g++ into a
// temporary directory, holding the benchmark's vectors in memory and
// building its index batch by batch on the benchmark's command, so that
// the store's build and hnswlib's are measured side by side on the same
// vectors, with the same settings, under the same load. It exists only to
// measure the store against.
package hnswlibpeer

import (
	"bufio"
	_ "embed"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

//go:embed cpp/peer.cc
var source []byte

// Header is hnswlib's header, as Debian's libhnswlib-dev installs it.
const Header = "/usr/include/hnswlib/hnswlib.h"

// Missing says what of g++ and hnswlib's header is not on the machine,
// or "" when both are.
func Missing() string {
	var missing []string
	if _, err := exec.LookPath("g++"); err != nil {
		missing = append(missing, "g++")
	}
	if _, err := os.Stat(Header); err != nil {
		missing = append(missing, Header+" (libhnswlib-dev)")
	}
	return strings.Join(missing, " and ")
}

// Version returns the version of the libhnswlib-dev package installed
// (its upstream part, "0.6.2"), or "" when dpkg does not know it.
func Version() string {
	out, err := exec.Command("dpkg-query", "-W", "-f=${Version}", "libhnswlib-dev").Output()
	if err != nil {
		return ""
	}
	v := strings.TrimSpace(string(out))
	if _, after, ok := strings.Cut(v, ":"); ok { // an epoch
		v = after
	}
	v, _, _ = strings.Cut(v, "-") // the Debian revision
	return v
}

// Peer is a running peer process and the index it builds.
type Peer struct {
	cmd  *exec.Cmd
	in   io.WriteCloser
	out  *bufio.Reader
	dir  string
	dim  int
	done bool // Close was called
}

// Start compiles the peer into dir (g++ -O3 -march=native -std=c++17
// -pthread), writes vecs there and starts the process on them: an empty
// index (InnerProductSpace, so the vectors must be unit) of at most
// len(vecs) vectors with links m and ef_construction efc, adding on
// threads threads.
func Start(dir string, vecs [][]float32, m, efc, threads int) (*Peer, error) {
	if len(vecs) == 0 {
		return nil, errors.New("hnswlibpeer: no vectors")
	}
	if missing := Missing(); missing != "" {
		return nil, fmt.Errorf("hnswlibpeer: %s not found", missing)
	}
	src, bin := filepath.Join(dir, "peer.cc"), filepath.Join(dir, "peer")
	if err := os.WriteFile(src, source, 0o644); err != nil {
		return nil, err
	}
	if out, err := exec.Command("g++", "-O3", "-march=native", "-std=c++17", "-pthread", "-o", bin, src).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("hnswlibpeer: g++: %v\n%s", err, out)
	}
	dim := len(vecs[0])
	vecFile := filepath.Join(dir, "vectors.f32")
	if err := writeFloats(vecFile, vecs, dim); err != nil {
		return nil, err
	}
	p := &Peer{dir: dir, dim: dim}
	p.cmd = exec.Command(bin, vecFile, strconv.Itoa(dim), strconv.Itoa(m), strconv.Itoa(efc), strconv.Itoa(threads))
	p.cmd.Stderr = os.Stderr // its own errors, before it stops
	var err error
	if p.in, err = p.cmd.StdinPipe(); err != nil {
		return nil, err
	}
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	p.out = bufio.NewReaderSize(stdout, 1<<16)
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("hnswlibpeer: %v", err)
	}
	line, err := p.readLine()
	if err != nil {
		p.Close()
		return nil, err
	}
	if line != "ready "+strconv.Itoa(len(vecs)) {
		p.Close()
		return nil, fmt.Errorf("hnswlibpeer: started with %q, want ready %d", line, len(vecs))
	}
	return p, nil
}

// writeFloats writes vecs to path as rows of dim float32, little-endian.
func writeFloats(path string, vecs [][]float32, dim int) error {
	buf := make([]byte, 0, len(vecs)*dim*4)
	for i, v := range vecs {
		if len(v) != dim {
			return fmt.Errorf("hnswlibpeer: vector %d has %d components, want %d", i, len(v), dim)
		}
		for _, x := range v {
			buf = binary.LittleEndian.AppendUint32(buf, math.Float32bits(x))
		}
	}
	return os.WriteFile(path, buf, 0o644)
}

// command sends one command line and returns the answer's first line.
func (p *Peer) command(format string, args ...any) (string, error) {
	if _, err := fmt.Fprintf(p.in, format+"\n", args...); err != nil {
		return "", fmt.Errorf("hnswlibpeer: %v", err)
	}
	return p.readLine()
}

// readLine reads a line of the process's answer; an "error: " line is
// returned as an error.
func (p *Peer) readLine() (string, error) {
	line, err := p.out.ReadString('\n')
	if err != nil {
		return "", fmt.Errorf("hnswlibpeer: the process stopped (its stderr is above): %v", err)
	}
	line = strings.TrimSuffix(line, "\n")
	if msg, ok := strings.CutPrefix(line, "error: "); ok {
		return "", fmt.Errorf("hnswlibpeer: %s", msg)
	}
	return line, nil
}

// Add adds vectors lo..hi-1 (their labels lo..hi-1) to the index and
// returns the time it took, as the process measured it (its threads'
// start to their end).
func (p *Peer) Add(lo, hi int) (time.Duration, error) {
	line, err := p.command("add %d %d", lo, hi)
	if err != nil {
		return 0, err
	}
	ns, err := strconv.ParseInt(line, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("hnswlibpeer: add answered %q", line)
	}
	return time.Duration(ns), nil
}

// Search returns the labels of the k nearest of each query in the index
// (closest first), searched at ef.
func (p *Peer) Search(queries [][]float32, k, ef int) ([][]int64, error) {
	qFile := filepath.Join(p.dir, "queries.f32")
	if err := writeFloats(qFile, queries, p.dim); err != nil {
		return nil, err
	}
	if _, err := fmt.Fprintf(p.in, "search %d %d %s\n", k, ef, qFile); err != nil {
		return nil, fmt.Errorf("hnswlibpeer: %v", err)
	}
	out := make([][]int64, len(queries))
	for i := range out {
		line, err := p.readLine()
		if err != nil {
			return nil, err
		}
		for f := range strings.FieldsSeq(line) {
			id, err := strconv.ParseInt(f, 10, 64)
			if err != nil {
				return nil, fmt.Errorf("hnswlibpeer: search answered %q", line)
			}
			out[i] = append(out[i], id)
		}
	}
	return out, nil
}

// Close ends the process (a quit command, then its exit); again, it does
// nothing.
func (p *Peer) Close() error {
	if p.done {
		return nil
	}
	p.done = true
	fmt.Fprintln(p.in, "quit")
	p.in.Close()
	if err := p.cmd.Wait(); err != nil {
		return fmt.Errorf("hnswlibpeer: %v", err)
	}
	return nil
}
