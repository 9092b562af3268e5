package mcpcore

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ResultReadArgs are the arguments of a plugin's "<prefix>_result" tool.
type ResultReadArgs struct {
	ResultID string `json:"result_id" jsonschema:"the result_id returned in place of a large result"`
	Offset   int64  `json:"offset,omitempty" jsonschema:"byte offset into the serialized JSON result (default 0)"`
	Length   int64  `json:"length,omitempty"` // described with the configured chunk size by addResultTool
	Release  bool   `json:"release,omitempty" jsonschema:"true frees the result instead of reading it"`
}

// ResultReadReply is one chunk of a retained result, or the confirmation of
// a release.
type ResultReadReply struct {
	ResultID   string `json:"result_id"`
	Released   bool   `json:"released,omitempty"`
	Offset     int64  `json:"offset"`
	Bytes      int64  `json:"bytes"`
	TotalBytes int64  `json:"total_bytes"`
	DataBase64 string `json:"data_base64"`
	NextOffset *int64 `json:"next_offset"`
}

// addResultTool adds the plugin's read tool. Its replies are always inline:
// pages are never paged again.
func (h *Host) addResultTool() {
	name := h.ReadToolName()
	s := h.srv
	args, err := newArgSchema(nil, func() (*jsonschema.Schema, error) {
		schema, err := jsonschema.For[ResultReadArgs](nil)
		if err == nil {
			schema.Properties["length"].Description = fmt.Sprintf("bytes to read (default %d, the result_chunk_bytes limit; at most %d)", s.limits.ResultChunkBytes, MaxResultChunkBytes)
		}
		return schema, err
	})
	if err != nil {
		h.fail(fmt.Errorf("tool %s: %w", name, err))
		return
	}
	tool := &mcp.Tool{
		Name:        name,
		Title:       "Read a large result",
		Description: fmt.Sprintf("Read a retained large result of a %s tool by byte range (%d bytes by default, at most %d per read), or release it. Follow next_offset until it is null, concatenate the base64-decoded chunks, then parse the JSON. Chunks may split UTF-8 sequences: decode only after reassembly. Results expire a fixed time after they were created; reads do not extend it.", h.name, s.limits.ResultChunkBytes, MaxResultChunkBytes),
		InputSchema: args.schema,
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: false, IdempotentHint: true, OpenWorldHint: new(false)},
	}
	h.addTool(tool, true, nil, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		in, err := decodeArgs[ResultReadArgs](args, req.Params.Arguments)
		if err != nil {
			return toolError(err), nil
		}
		reply, err := s.readResult(resultOwner(h, req), in)
		if err != nil {
			return toolError(err), nil
		}
		data, err := json.Marshal(reply)
		if err != nil {
			return toolError(err), nil
		}
		return inlineResult(data, false), nil
	})
}

func (s *Server) readResult(owner string, in ResultReadArgs) (*ResultReadReply, error) {
	if in.Release {
		if err := s.results.Release(owner, in.ResultID); err != nil {
			return nil, err
		}
		return &ResultReadReply{ResultID: in.ResultID, Released: true}, nil
	}
	length := in.Length
	if length == 0 {
		length = s.limits.ResultChunkBytes
	}
	if length > MaxResultChunkBytes {
		return nil, &LimitError{Limit: "result_chunk_bytes", Max: MaxResultChunkBytes, Actual: length,
			Detail: "ask for a smaller length and follow next_offset"}
	}
	c, err := s.results.Read(owner, in.ResultID, in.Offset, length)
	if err != nil {
		return nil, err
	}
	return &ResultReadReply{
		ResultID:   in.ResultID,
		Offset:     c.Offset,
		Bytes:      int64(len(c.Data)),
		TotalBytes: c.TotalBytes,
		DataBase64: base64.StdEncoding.EncodeToString(c.Data),
		NextOffset: c.NextOffset,
	}, nil
}
