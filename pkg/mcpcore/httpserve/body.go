package httpserve

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/mcpkit/mcpkit/pkg/jsonscan"
	"github.com/mcpkit/mcpkit/pkg/mcpcore/internal/wire"
)

// codeLimit is the JSON-RPC error code of a request refused by a limit.
const codeLimit = -32000

// limitBody bounds the time a request's body may take to arrive: it sets
// the connection's read deadline to BodyTimeout from now and clears it once
// the body has been read to its end, so that long-lived responses (SSE)
// are not cut. A handler that leaves the body unread keeps the deadline,
// which bounds net/http's discarding of the rest. Requests without a body
// (GET, WebSocket upgrades) are left alone.
func (h *Handler) limitBody(next http.Handler) http.Handler {
	if h.bodyTimeout < 0 {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body != nil && r.Body != http.NoBody {
			rc := http.NewResponseController(w)
			if rc.SetReadDeadline(time.Now().Add(h.bodyTimeout)) == nil {
				r = r.WithContext(r.Context()) // a shallow copy: net/http keeps the original
				r.Body = &deadlineBody{ReadCloser: r.Body, rc: rc}
			}
		}
		next.ServeHTTP(w, r)
	})
}

// deadlineBody clears the connection's read deadline when the body ends.
type deadlineBody struct {
	io.ReadCloser
	rc      *http.ResponseController
	cleared bool
}

func (b *deadlineBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF && !b.cleared {
		b.cleared = true
		b.rc.SetReadDeadline(time.Time{})
	}
	return n, err
}

// budget is the MaxInflightBytes account: bytes of request bodies being
// read or handled. A zero or negative max means no budget.
type budget struct {
	max  int64
	used atomic.Int64
}

// take reserves n bytes, or reports false if they would exceed the budget.
func (b *budget) take(n int64) bool {
	if b.max <= 0 {
		return true
	}
	for {
		cur := b.used.Load()
		if cur+n > b.max {
			return false
		}
		if b.used.CompareAndSwap(cur, cur+n) {
			return true
		}
	}
}

// give returns n bytes taken before.
func (b *budget) give(n int64) {
	if b.max > 0 {
		b.used.Add(-n)
	}
}

// readBody reads the request body under the frame cap (MaxBodyBytes), the
// body deadline (see limitBody) and the in-flight budget (MaxInflightBytes).
// The budget holds the body's size (its Content-Length from the start, or
// its buffer as it grows) until release is called, when the request's
// handling ends. A body with a Content-Length is read into a buffer of
// exactly that size, so reading costs one copy of it. If ok is false, the
// refusal has been written: 413 over the cap, 503 over the budget (the rest
// of the body is then read and dropped), 408 past the deadline, 400 for a
// broken body.
func (h *Handler) readBody(w http.ResponseWriter, r *http.Request) (body []byte, release func(), ok bool) {
	var held int64
	release = func() { h.inflight.give(held) }
	take := func(n int64) bool {
		if !h.inflight.take(n) {
			return false
		}
		held += n
		return true
	}
	refuse := func(status int, msg string) ([]byte, func(), bool) {
		release()
		switch status {
		case http.StatusRequestEntityTooLarge:
			h.refused("limit", "frame_bytes")
		case http.StatusServiceUnavailable:
			h.refused("limit", "inflight_request_bytes")
		case http.StatusRequestTimeout:
			h.refused("timeout", "body_timeout")
		}
		if status != http.StatusServiceUnavailable {
			abandonBody(w, r)
			http.Error(w, msg, status)
			return nil, nil, false
		}
		// Over the budget, the client is likely sound and only early: it
		// gets the refusal at once, and the rest of its body is read and
		// dropped (under the body deadline), so that it sees the refusal
		// rather than a connection reset while it is still sending.
		refuseLimit(w, jsonrpc.ID{}, fmt.Errorf("limit inflight_request_bytes reached: request bodies of at most %d bytes in all may be in flight; retry later, or raise limits.inflight_request_bytes", h.inflight.max),
			"inflight_request_bytes", h.inflight.max)
		http.NewResponseController(w).Flush()
		io.Copy(io.Discard, r.Body)
		return nil, nil, false
	}
	tooLarge := fmt.Sprintf("request body exceeds %d bytes (frame_bytes limit)", h.maxBody)

	var err error
	if n := r.ContentLength; n >= 0 {
		if h.maxBody > 0 && n > h.maxBody {
			return refuse(http.StatusRequestEntityTooLarge, tooLarge)
		}
		if !take(n) {
			return refuse(http.StatusServiceUnavailable, "")
		}
		body = make([]byte, n)
		if _, err = io.ReadFull(r.Body, body); err == nil {
			// Read on to the end, which clears the body deadline; net/http
			// allows no more than Content-Length.
			var one [1]byte
			if _, err = r.Body.Read(one[:]); err == io.EOF {
				err = nil
			}
		}
	} else {
		const first = 32 << 10
		for err == nil {
			if len(body) == cap(body) {
				size := max(2*cap(body), first)
				if h.maxBody > 0 {
					size = min(size, int(h.maxBody)+1)
				}
				if !take(int64(size)) {
					return refuse(http.StatusServiceUnavailable, "")
				}
				grown := make([]byte, len(body), size)
				copy(grown, body)
				h.inflight.give(int64(cap(body)))
				held -= int64(cap(body))
				body = grown
			}
			var m int
			m, err = r.Body.Read(body[len(body):cap(body)])
			body = body[:len(body)+m]
			if h.maxBody > 0 && int64(len(body)) > h.maxBody {
				return refuse(http.StatusRequestEntityTooLarge, tooLarge)
			}
		}
		if err == io.EOF {
			err = nil
		}
	}
	switch {
	case err == nil:
		return body, release, true
	case errors.Is(err, os.ErrDeadlineExceeded):
		return refuse(http.StatusRequestTimeout, fmt.Sprintf("request body not received within %v", h.bodyTimeout))
	default:
		return refuse(http.StatusBadRequest, "failed to read body")
	}
}

// limitData is the data of a JSON-RPC error refusing a request by a limit.
type limitData struct {
	Limit string `json:"limit"`
	Max   int64  `json:"max"`
}

// refuseLimit answers HTTP 503 with a JSON-RPC error for id (none when id
// is not valid) whose message is err's and whose data names limit and its
// value (no data when limit is "").
func refuseLimit(w http.ResponseWriter, id jsonrpc.ID, err error, limit string, max int64) {
	var data json.RawMessage
	if limit != "" {
		data, _ = json.Marshal(limitData{Limit: limit, Max: max})
	}
	msg, encErr := jsonrpc.EncodeMessage(&jsonrpc.Response{ID: id, Error: &jsonrpc.Error{Code: codeLimit, Message: err.Error(), Data: data}})
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Retry-After", "5")
	w.WriteHeader(http.StatusServiceUnavailable)
	if encErr == nil {
		w.Write(msg)
	}
}

// splitBody splits a POST body as the SDK will read it (readBatch in
// mcp/transport.go): the elements of the JSON array it starts with, or else
// the whole body as one message (data after the first value included: the
// SDK's decoder ignores it).
func splitBody(body []byte) (msgs [][]byte, isBatch bool) {
	if i := jsonscan.SkipWS(body, 0); i < len(body) && body[i] == '[' {
		var raws []json.RawMessage
		if json.NewDecoder(bytes.NewReader(body)).Decode(&raws) == nil {
			msgs = make([][]byte, len(raws))
			for i, raw := range raws {
				msgs[i] = raw
			}
			return msgs, true
		}
	}
	return [][]byte{body}, false
}

// inbound passes each message through ids (see [wire.Table.Inbound]), in
// place.
func inbound(ids *wire.Table, msgs [][]byte) {
	for i, m := range msgs {
		msgs[i] = ids.Inbound(m)
	}
}

// joinBody returns the body to give the SDK: the one message, or the batch.
func joinBody(msgs [][]byte, isBatch bool) []byte {
	if !isBatch {
		return msgs[0]
	}
	return append(append([]byte{'['}, bytes.Join(msgs, []byte{','})...), ']')
}

// decodeMessages decodes messages with the SDK's own decoder, which is
// what decides what the SDK will do with them (keys case-sensitive, the
// last duplicate winning).
func decodeMessages(msgs [][]byte, isBatch bool) ([]jsonrpc.Message, error) {
	if isBatch && len(msgs) == 0 {
		return nil, errors.New("empty batch")
	}
	out := make([]jsonrpc.Message, len(msgs))
	for i, m := range msgs {
		msg, err := jsonrpc.DecodeMessage(m)
		if err != nil {
			return nil, err
		}
		out[i] = msg
	}
	return out, nil
}

// sdkBody is a request body for the SDK that lets go of the bytes once the
// SDK has read them, so that the SDK's copy is the only one left.
type sdkBody struct{ b []byte }

func (s *sdkBody) Read(p []byte) (int, error) {
	if len(s.b) == 0 {
		s.b = nil
		return 0, io.EOF
	}
	n := copy(p, s.b)
	s.b = s.b[n:]
	return n, nil
}

func (s *sdkBody) Close() error {
	s.b = nil
	return nil
}

// setBody makes body the request's body, as the SDK will read it.
func setBody(r *http.Request, body []byte) {
	r.Body = &sdkBody{b: body}
	r.ContentLength = int64(len(body))
}
