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
	Who       string    `json:"who"`  // "token:<16 hex>" or "anonymous"
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

// append writes e as one line and syncs it to disk.
func (a *auditLog) append(e auditEntry) error {
	b, err := json.Marshal(e)
	if err != nil {
		return fmt.Errorf("encode the audit entry: %w", err)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, err := a.f.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("write the audit file: %w", err)
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
