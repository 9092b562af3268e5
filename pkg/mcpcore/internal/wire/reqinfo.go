package wire

import (
	"net/http"
	"strconv"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// What a transport tells the host's telemetry of a request that the SDK
// does not pass to the server's middleware: the request's JSON-RPC id and,
// over HTTP, the client's address and the HTTP version. The transport puts
// them in the header map that reaches the middleware as
// mcp.RequestExtra.Header (over HTTP the request's own headers, after
// removing any copy the client sent: see [StripRequestInfo]).
const (
	HeaderRequestID   = "Mcpkit-Jsonrpc-Request-Id"
	HeaderClientAddr  = "Mcpkit-Client-Address" // host:port, as net/http's RemoteAddr
	HeaderHTTPVersion = "Mcpkit-Http-Version"   // 1.0, 1.1, 2 or 3
)

// StripRequestInfo removes the request-info headers a client sent itself.
func StripRequestInfo(h http.Header) {
	delete(h, HeaderRequestID)
	delete(h, HeaderClientAddr)
	delete(h, HeaderHTTPVersion)
}

// RequestID returns the id of msg, one JSON-RPC message, as the
// conventions' jsonrpc.request.id writes it (a string's content, a
// number's text), when msg is a request with an id that is not null.
func RequestID(msg []byte) (string, bool) {
	m, ok := scanMessage(msg)
	if !ok || !m.hasMethod || m.idAt < 0 {
		return "", false
	}
	id := msg[m.idAt:m.idEnd]
	if num, str, ok := finalID(id); ok {
		if str != nil {
			return string(str), true
		}
		return strconv.FormatInt(num, 10), true
	}
	if string(id) == "null" {
		return "", false
	}
	return string(id), true // a number the SDK would coerce, as the client wrote it
}

// IDString is RequestID for an id the SDK decoded.
func IDString(id jsonrpc.ID) (string, bool) {
	switch v := id.Raw().(type) {
	case string:
		return v, true
	case int64:
		return strconv.FormatInt(v, 10), true
	}
	return "", false
}

// HTTPVersion is the value of HeaderHTTPVersion for a request of r's
// protocol version.
func HTTPVersion(major, minor int) string {
	switch {
	case major == 1 && minor == 1:
		return "1.1"
	case major == 1:
		return "1.0"
	case major == 2:
		return "2"
	case major == 3:
		return "3"
	}
	return strconv.Itoa(major) + "." + strconv.Itoa(minor)
}
