package respadmin

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"sync"
	"time"
)

// auditEntry is one line of the audit file: who did what, when, and how
// it ended. Secret values are masked before they are recorded.
type auditEntry struct {
	Time      time.Time `json:"time"`
	Who       string    `json:"who"`  // "token:<16 hex>", "anonymous" or "unauthenticated"
	Role      string    `json:"role"` // the caller's role
	Method    string    `json:"method"`
	Path      string    `json:"path"`
	Action    string    `json:"action,omitempty"`
	Parameter string    `json:"parameter,omitempty"`
	Value     string    `json:"value,omitempty"`
	Confirmed bool      `json:"confirmed,omitempty"`
	Outcome   string    `json:"outcome"` // ok, refused (nothing sent to the target), failed
	Status    int       `json:"status"`
	Error     string    `json:"error,omitempty"`
}

// auditLog is the append-only audit file.
type auditLog struct {
	path string
	mu   sync.Mutex
	f    *os.File
}

func openAudit(path string) (*auditLog, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("respadmin: open the audit file: %w", err)
	}
	return &auditLog{path: path, f: f}, nil
}

// append writes e as one line and, with sync, syncs it to disk.
func (a *auditLog) append(e auditEntry, sync bool) error {
	b, err := json.Marshal(e)
	if err != nil {
		return fmt.Errorf("encode the audit entry: %w", err)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, err := a.f.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("write the audit file: %w", err)
	}
	if !sync {
		return nil
	}
	if err := a.f.Sync(); err != nil {
		return fmt.Errorf("sync the audit file: %w", err)
	}
	return nil
}

// tail returns the last n entries, oldest first.
func (a *auditLog) tail(n int) ([]json.RawMessage, error) {
	f, err := os.Open(a.path)
	if err != nil {
		return nil, fmt.Errorf("read the audit file: %w", err)
	}
	defer f.Close()
	ring := make([]json.RawMessage, 0, n)
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if len(ring) == n {
			ring = append(ring[:0], ring[1:]...)
		}
		ring = append(ring, json.RawMessage(append([]byte(nil), sc.Bytes()...)))
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read the audit file: %w", err)
	}
	return ring, nil
}

func (a *auditLog) close() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.f.Close()
}

// noAudit is the refusal of routes that need the audit file.
func noAudit() *Error {
	return &Error{Status: http.StatusServiceUnavailable, Kind: "disabled", Message: "no audit file is configured: POST routes and the audit log are disabled"}
}

// Who is recorded for a request refused before its bearer token was
// accepted (its Host, Origin or token): the token itself is never recorded.
const whoUnauthenticated = "unauthenticated"

// readAudit is the audit record of one GET request, kept in its context:
// a route that serves what the audit must see (a revealed value, a
// snapshot, MONITOR) marks it (auditMark) and records it before the first
// byte is sent (auditServe); wrap records a refusal, or a marked request's
// failure.
type readAudit struct {
	rec       auditEntry
	sensitive bool // marked: its failures are recorded too
}

type readAuditKey struct{}

// readAuditOf returns the request's record, or nil (no audit file).
func readAuditOf(r *http.Request) *readAudit {
	ra, _ := r.Context().Value(readAuditKey{}).(*readAudit)
	return ra
}

// auditMark marks r as a sensitive read of action (reveal, snapshot,
// monitor) on parameter (a key, a match pattern, or "").
func auditMark(r *http.Request, action, parameter string) {
	if ra := readAuditOf(r); ra != nil {
		ra.sensitive, ra.rec.Action, ra.rec.Parameter = true, action, parameter
	}
}

// auditServe records a marked read as served, synced, before its first
// byte is sent; when the record cannot be written, nothing is served.
func (s *Server) auditServe(r *http.Request) error {
	ra := readAuditOf(r)
	if ra == nil || !ra.sensitive {
		return nil
	}
	rec := ra.rec
	rec.Time, rec.Outcome, rec.Status = time.Now().UTC(), "ok", http.StatusOK
	if err := s.audit.append(rec, true); err != nil {
		s.logger.Error("audit entry not written", "path", rec.Path, "err", err)
		return &Error{Status: http.StatusInternalServerError, Kind: "internal", Message: "the audit entry could not be written, so nothing was sent: " + err.Error()}
	}
	return nil
}

// auditEnd records how a request the audit must see ended, when it did
// not end served: a refusal (status below 500; any route, before or after
// authentication) or a marked read's failure (after auditServe too, as a
// stream cut off). A refusal changed nothing, so its record is not synced:
// a flood of refused requests does not wait on the disk once each.
func (s *Server) auditEnd(ra *readAudit, e *Error) {
	if s.audit == nil || ra == nil || (e.Status >= 500 && !ra.sensitive) {
		return
	}
	rec := ra.rec
	rec.Time, rec.Outcome, rec.Status, rec.Error = time.Now().UTC(), "failed", e.Status, e.Message
	if e.Status < 500 {
		rec.Outcome = "refused"
	}
	if err := s.audit.append(rec, e.Status >= 500); err != nil {
		s.logger.Error("audit entry not written", "path", rec.Path, "err", err)
	}
}
