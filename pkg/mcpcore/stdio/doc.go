// Package stdio is mcpkit's newline-delimited JSON-RPC [mcp.Transport] for
// standard input and output.
//
// A [Transport] reads one JSON-RPC message per line from a reader (normally
// os.Stdin) and writes one JSON-RPC message per line to a writer (normally
// os.Stdout). Compared with the SDK's own [mcp.StdioTransport] it:
//
//   - ignores blank and whitespace-only lines and strips a trailing "\r";
//   - bounds the memory spent on one incoming line: a line longer than
//     [Options.MaxFrameBytes] is read and discarded without being buffered
//     whole, answered with a JSON-RPC "invalid request" error (-32600) that
//     carries the request id when it can be recovered from the first few KiB
//     of the line, and the session goes on with the next line;
//   - answers a malformed line with a JSON-RPC "parse error" (-32700), a line
//     that is JSON but not a JSON-RPC message with "invalid request" (-32600),
//     and a batch (a JSON array) with "invalid request" (-32600), and goes on,
//     where the SDK's transport would end the session;
//   - lets Close unblock a pending Read even when the underlying read cannot
//     be interrupted.
//
// What it must not do: it never writes anything but complete JSON-RPC
// messages, one per line, to the writer. Diagnostics go to
// [Options.Logger] only (discarded when nil); a frame written by Write and an
// error response written by the transport itself never interleave.
//
// The writer is never closed by the transport; the reader is closed by
// Close when it implements [io.Closer].
package stdio
