// Command respbound is the lower bound BenchmarkRespSidecar reports beside
// bin/mcpkit: the least an MCP stdio sidecar can do to answer that
// benchmark's calls on the same machine. It reads a request line, finds
// the id and the commands by searching bytes (no JSON decoder: it trusts
// the benchmark's own requests), writes the commands to Redis as one
// pipeline, reads one simple-string reply per command, and writes the
// bytes mcpkit answers (the structured content and its escaped text copy);
// all on one goroutine and one processor, with one raw system call per
// read and write (a blocking one for its stdin and stdout, which only that
// goroutine needs; internal/rawio's for the socket): the Go runtime stays
// out of the way as far as it can.
//
// It validates nothing, keeps no session and answers only what the
// benchmark sends: initialize, resp_session list (with an empty list) and
// resp_execute of commands whose arguments are plain strings, each
// replied to with a simple string. Anything else stops it with an error.
// It is no product: it shows how close mcpkit comes to what any Go
// implementation of the same exchange could reach.
//
//	respbound --port PORT
package main

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"strconv"
	"syscall"
	"unsafe"

	"github.com/mcpkit/mcpkit/internal/rawio"
)

func main() {
	port := flag.Int("port", 6379, "the Redis port on 127.0.0.1")
	flag.Parse()
	runtime.GOMAXPROCS(1) // as mcpkit's stdio sidecar runs
	for _, fd := range []int{0, 1} {
		if err := syscall.SetNonblock(fd, false); err != nil { // rawFD blocks
			fmt.Fprintln(os.Stderr, "respbound:", err)
			os.Exit(1)
		}
	}
	if err := run(*port, rawFD(0), rawFD(1)); err != nil && !errors.Is(err, io.EOF) {
		fmt.Fprintln(os.Stderr, "respbound:", err)
		os.Exit(1)
	}
}

// run answers the request lines of in on out until in ends.
func run(port int, in io.Reader, out io.Writer) error {
	tcp, err := net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(port))
	if err != nil {
		return err
	}
	defer tcp.Close()
	conn := rawio.Conn(tcp)
	lines := bufio.NewReaderSize(in, 1<<20)
	replies := bufio.NewReaderSize(conn, 1<<20)
	var wire, structured, line []byte
	for {
		req, err := lines.ReadSlice('\n')
		if err != nil {
			return err
		}
		id, ok := member(req, `"id":`)
		if !ok {
			continue // a notification
		}
		line = append(line[:0], `{"jsonrpc":"2.0","id":`...)
		line = append(line, id...)
		line = append(line, `,"result":`...)
		switch {
		case bytes.Contains(req, []byte(`"method":"initialize"`)):
			line = append(line, `{"capabilities":{"tools":{}},"protocolVersion":"2025-11-25","serverInfo":{"name":"respbound","version":"0"}}}`...)
		case bytes.Contains(req, []byte(`"name":"resp_session"`)):
			line = append(line, `{"content":[{"type":"text","text":"{\"sessions\":[]}"}],"structuredContent":{"sessions":[]}}}`...)
		default:
			cmds, ok := member(req, `"commands":`)
			if !ok {
				return fmt.Errorf("a request neither initialize, resp_session nor resp_execute: %.200s", req)
			}
			var n int
			if wire, n, err = encodeCommands(wire[:0], cmds); err != nil {
				return err
			}
			if _, err := conn.Write(wire); err != nil {
				return err
			}
			if structured, err = readReplies(structured[:0], replies, n); err != nil {
				return err
			}
			line = append(line, `{"content":[{"type":"text","text":"`...)
			for _, c := range structured { // plain ASCII JSON: only its quotes need a backslash
				if c == '"' {
					line = append(line, '\\')
				}
				line = append(line, c)
			}
			line = append(line, `"}],"structuredContent":`...)
			line = append(line, structured...)
			line = append(line, "}}"...)
		}
		line = append(line, '\n')
		if _, err := out.Write(line); err != nil {
			return err
		}
	}
}

// rawFD reads and writes a descriptor in blocking mode by raw system
// calls: a read holds the process's one processor until data comes, which
// nothing else needs meanwhile, and neither wakes the runtime's monitor
// thread as the os package's calls would (see internal/rawio).
type rawFD uintptr

func (fd rawFD) Read(p []byte) (int, error) {
	for {
		n, _, errno := syscall.RawSyscall(syscall.SYS_READ, uintptr(fd), uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
		switch {
		case errno == syscall.EINTR:
			continue
		case errno != 0:
			return 0, errno
		case n == 0:
			return 0, io.EOF
		}
		return int(n), nil
	}
}

func (fd rawFD) Write(p []byte) (int, error) {
	done := 0
	for done < len(p) {
		n, _, errno := syscall.RawSyscall(syscall.SYS_WRITE, uintptr(fd), uintptr(unsafe.Pointer(&p[done])), uintptr(len(p)-done))
		switch {
		case errno == syscall.EINTR:
			continue
		case errno != 0:
			return done, errno
		}
		done += int(n)
	}
	return done, nil
}

// member returns the bytes after key in req up to the end of the value
// that starts there: a number, or an array (matched by its brackets,
// which the benchmark's strings do not hold).
func member(req []byte, key string) ([]byte, bool) {
	i := bytes.Index(req, []byte(key))
	if i < 0 {
		return nil, false
	}
	v := req[i+len(key):]
	end, depth := 0, 0
	for end < len(v) {
		c := v[end]
		switch {
		case c == '[':
			depth++
		case c == ']':
			depth--
		case depth == 0 && (c < '0' || c > '9'):
			return v[:end], end > 0
		}
		end++
		if depth == 0 && c == ']' {
			return v[:end], true
		}
	}
	return nil, false
}

// encodeCommands appends the RESP encoding of cmds, a JSON array of
// arrays of plain strings, to wire, and returns how many commands it holds.
func encodeCommands(wire, cmds []byte) ([]byte, int, error) {
	var args [][]byte
	n := 0
	for i := 1; i < len(cmds)-1; i++ { // inside the outer brackets
		switch cmds[i] {
		case '"':
			end := bytes.IndexByte(cmds[i+1:], '"')
			if end < 0 || bytes.IndexByte(cmds[i+1:i+1+end], '\\') >= 0 {
				return nil, 0, fmt.Errorf("an argument that is not a plain string: %.100s", cmds[i:])
			}
			args = append(args, cmds[i+1:i+1+end])
			i += end + 1
		case ']':
			wire = append(wire, '*')
			wire = strconv.AppendInt(wire, int64(len(args)), 10)
			wire = append(wire, "\r\n"...)
			for _, a := range args {
				wire = append(wire, '$')
				wire = strconv.AppendInt(wire, int64(len(a)), 10)
				wire = append(wire, "\r\n"...)
				wire = append(wire, a...)
				wire = append(wire, "\r\n"...)
			}
			args = args[:0]
			n++
		}
	}
	return wire, n, nil
}

// readReplies reads n simple-string replies and appends the structured
// content mcpkit's resp_execute answers with for them to dst.
func readReplies(dst []byte, r *bufio.Reader, n int) ([]byte, error) {
	dst = append(dst, `{"session":"default","outcome":"ok","replies":[`...)
	for i := range n {
		reply, err := r.ReadSlice('\n')
		if err != nil {
			return nil, err
		}
		value := bytes.TrimSuffix(reply[1:], []byte("\r\n"))
		if reply[0] != '+' || bytes.ContainsAny(value, `"\`) {
			return nil, fmt.Errorf("a reply that is not a plain simple string: %q", reply)
		}
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"type":"simple_string","encoding":"utf8","value":"`...)
		dst = append(dst, value...)
		dst = append(dst, `"}`...)
	}
	return append(dst, `],"pushes":[]}`...), nil
}
