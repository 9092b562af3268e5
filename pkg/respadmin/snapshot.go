package respadmin

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strconv"
	"time"
)

// snapshotChunk is how much of the RDB is read from the target at once.
const snapshotChunk = 256 << 10

// getSnapshot streams an RDB snapshot taken over the replication protocol,
// as `redis-cli --rdb` does: on a connection of its own it announces
// REPLCONF rdb-only (servers that predate it ignore the refusal), sends
// SYNC, skips the newlines the server sends while it saves, reads the
// "$<length>" header and streams that many bytes with Content-Length set.
// The connection does not announce the EOF capability, so the server
// always sends a length (it falls back to a disk save for this replica).
// A failure after the header aborts the response, which the client sees
// as a body shorter than Content-Length.
//
// The audit records the download before its first byte, and a transfer cut
// off after it.
func getSnapshot(s *Server, w http.ResponseWriter, r *http.Request, _ caller) error {
	if !s.opts.ReplicationExport {
		return &Error{Status: http.StatusForbidden, Kind: "disabled", Message: "the gateway's replication export is not enabled (replication_export in its configuration)"}
	}
	ctx, cancel := context.WithTimeout(r.Context(), s.opts.SnapshotTimeout)
	defer cancel()
	conn, err := s.pool.dial(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	if _, err := conn.Do(ctx, []byte("REPLCONF"), []byte("rdb-only"), []byte("1")); err != nil {
		return unavailable(fmt.Errorf("REPLCONF: %w", err))
	}
	if _, err := conn.WriteRaw(ctx, []byte("*1\r\n$4\r\nSYNC\r\n")); err != nil {
		return unavailable(fmt.Errorf("SYNC: %w", err))
	}
	read := func() ([]byte, error) {
		wait := time.Until(deadlineOf(ctx))
		data, timedOut, eof, err := conn.ReadRaw(ctx, snapshotChunk, wait)
		switch {
		case err != nil:
			return nil, err
		case timedOut:
			return nil, fmt.Errorf("the target sent nothing within %s", s.opts.SnapshotTimeout)
		case eof:
			return nil, fmt.Errorf("the target closed the connection")
		}
		return data, nil
	}
	var buf []byte
	var size int64
	for {
		buf = bytes.TrimLeft(buf, "\n") // keep-alive newlines while the server saves
		if i := bytes.Index(buf, []byte("\r\n")); i >= 0 {
			line := string(buf[:i])
			buf = buf[i+2:]
			if len(line) > 0 && line[0] == '-' {
				return &Error{Status: http.StatusBadGateway, Kind: "target_error", Message: "SYNC: " + line[1:]}
			}
			n, err := strconv.ParseInt(line[min(1, len(line)):], 10, 64)
			if len(line) == 0 || line[0] != '$' || err != nil || n < 0 {
				return unavailable(fmt.Errorf("SYNC: unexpected header %q (a diskless EOF-marked transfer is not supported)", line))
			}
			size = n
			break
		}
		if len(buf) > 4096 {
			return unavailable(fmt.Errorf("SYNC: no header in the first %d bytes", len(buf)))
		}
		data, err := read()
		if err != nil {
			return unavailable(fmt.Errorf("SYNC: %w", err))
		}
		buf = append(buf, data...)
	}
	if err := s.auditServe(r); err != nil {
		return err
	}
	h := w.Header()
	h.Set("Content-Type", "application/octet-stream")
	h.Set("Content-Length", strconv.FormatInt(size, 10))
	h.Set("Content-Disposition", `attachment; filename="snapshot.rdb"`)
	w.WriteHeader(http.StatusOK)
	var sent int64
	// aborted ends a transfer cut off: logged, audited, and the response
	// aborted (the client sees a body shorter than Content-Length).
	aborted := func(why string, err error) {
		s.logger.Warn("snapshot aborted", "why", why, "sent", sent, "size", size, "err", err)
		s.auditEnd(readAuditOf(r), &Error{Status: http.StatusBadGateway, Kind: "unavailable",
			Message: fmt.Sprintf("the snapshot was cut off after %d of %d bytes: %s: %v", sent, size, why, err)})
		panic(http.ErrAbortHandler)
	}
	for sent < size {
		if len(buf) == 0 {
			data, err := read()
			if err != nil {
				aborted("reading from the target", err)
			}
			buf = data
		}
		chunk := buf[:min(int64(len(buf)), size-sent)]
		if _, err := w.Write(chunk); err != nil {
			aborted("the client went away", err)
		}
		sent += int64(len(chunk))
		buf = buf[len(chunk):]
	}
	return nil
}

// deadlineOf returns ctx's deadline (every snapshot context has one).
func deadlineOf(ctx context.Context) time.Time {
	d, _ := ctx.Deadline()
	return d
}
