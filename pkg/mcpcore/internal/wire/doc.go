// Package wire is JSON-RPC id fidelity and cancellation tracking, shared by
// mcpkit's transports; it holds no SDK state.
//
// The SDK decodes a request id through float64, so an id such as
// 9007199254740993, 123456789012345678901234567890 or 1.5 comes back altered
// (and two requests can collide on one id). A transport keeps one [Table]
// per connection (per legacy HTTP session, per stateless HTTP request),
// passes every incoming message through [Table.Inbound] before the SDK
// decodes it and every outgoing message through [Table.Outbound] after the
// SDK encodes it. Inbound swaps each id the SDK would coerce for a unique
// string token, Outbound swaps it back, so every id is echoed exactly as it
// arrived. The same table notes the requests the peer cancelled with
// notifications/cancelled, and Outbound tells the transport to drop their
// responses: MCP says the receiver of a cancellation should not answer.
//
// It looks at messages without decoding them, with package
// [github.com/mcpkit/mcpkit/pkg/jsonscan]. A transport that also checks a
// message's extent (its end, its nesting depth) scans it once with [Scan]
// and hands the result to [Table.InboundScanned] rather than calling
// Inbound, so that the message is passed over once for both.
//
// What it must not do: change any message it has no reason to (canonical
// integer and string ids, notifications, responses to untranslated,
// uncancelled requests pass byte for byte), allocate on that path, or hold
// anything but ids: a table's memory is bounded by the requests in flight
// plus a fixed number of cancellation marks.
package wire
