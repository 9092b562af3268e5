// Package resp is a lossless client engine for the Redis serialization
// protocol (RESP2 and RESP3): a decoder for every frame type, an encoder for
// commands and values, the JSON form of a decoded value, the conversion of
// JSON command arguments to bytes, and connections (TCP or TLS, HELLO with
// AUTH, SELECT) that run ordered duplex pipelines and manual send/receive.
//
// A decoded [Value] keeps everything the server sent: simple versus bulk
// strings, verbatim formats, double text as received (nan, inf), big
// numbers, map order and duplicate keys, attributes with the reply they
// annotate, and pushes. Every limit (bulk length, aggregate length, nesting
// depth, reply budget) fails with a typed error; nothing is truncated.
//
// It never retries or replays a command, and it holds no MCP code: the MCP
// plugin that exposes it is plugins/resp.
package resp
