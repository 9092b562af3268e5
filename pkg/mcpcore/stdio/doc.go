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
//     carries the request id when it can be recovered, wherever it is in the
//     line (its top-level members are scanned as the line is skipped, see
//     jsonscan.MemberFinder), and the session goes on with the next line;
//   - answers a malformed line with a JSON-RPC "parse error" (-32700), a line
//     that is JSON but not a JSON-RPC message with "invalid request" (-32600),
//     and a batch (a JSON array) with "invalid request" (-32600), and goes on,
//     where the SDK's transport would end the session;
//   - echoes every request id exactly as it arrived: the SDK decodes ids
//     through float64 (9007199254740993 would come back as
//     9007199254740992, 1.5 as 1, and two requests could collide), so an id
//     it would alter is swapped for a token on the way in and restored on
//     the way out (package wire);
//   - does not answer a request the client cancelled with
//     notifications/cancelled (MCP: the receiver should not respond): the
//     SDK's response to it is dropped;
//   - applies backpressure: it stops reading while [Options.MaxPendingRequests]
//     requests, or [Options.MaxInflightBytes] bytes of requests, have been
//     read and not yet answered (a response is answered once written, or
//     dropped), so that a client that writes without reading stdout cannot
//     make memory grow without bound. One request is always admitted when
//     none is pending, so a frame of MaxFrameBytes always works.
//     Notifications and the client's responses to server requests do not
//     count, and are passed on at once while reading is running;
//   - lets Close unblock a pending Read even when the underlying read cannot
//     be interrupted;
//   - lets a host answer calls itself without the SDK's read loop in
//     between ([Transport.ConnectTaking]): the reader goroutine offers each
//     message to the host, runs a claimed call's work itself and hands
//     reading on to another reader goroutine, idle ones (at most four)
//     being reused so that a call does not start on a fresh stack.
//
// While reading is paused the transport cannot see anything the client
// writes after the request it holds: a notifications/cancelled, or the
// client's response to a server request (sampling, elicitation, roots) that
// a pending tool call waits for. Such a call then ends at the tool timeout
// (the host's tool_timeout), which writes its response, frees its slot and
// resumes reading: the wait is bounded by the tool timeout. In practice
// reading pauses only when the client does not read stdout (the host refuses
// calls beyond its concurrency limit at once, and those answers free their
// slots as soon as they are written).
//
// Memory: a line up to 1 MiB is assembled in a reused buffer; a longer one
// is copied once in chunks and assembled at its exact size, and a request's
// params (or a response's result) of 64 KiB or more are not copied again by
// decoding: the decoded message keeps that part of the line. Reading a frame
// thus costs about twice its size in allocations (the SDK's decoder alone
// costs five times). What the server does with a request afterwards is not
// the transport's: the SDK keeps a request's params for the whole call.
//
// Time: a line is passed over twice before its message is handed on: once
// by a scanner that does not validate (package wire's Scan: where the
// object ends, how deep it nests, and the members the id table needs), and
// once by the validating decoder, which the SDK's own checks (one object,
// the SDK's depth limit of 1000) then need not repeat.
//
// What it must not do: it never writes anything but complete JSON-RPC
// messages, one per line, to the writer. Diagnostics go to
// [Options.Logger] only (discarded when nil); a frame written by Write and an
// error response written by the transport itself never interleave.
//
// The writer is never closed by the transport; the reader is closed by
// Close when it implements [io.Closer].
package stdio
