package respadmin

import (
	"encoding/json"
	"strconv"
	"strings"
)

// OpenAPI returns the OpenAPI 3.1 document of the gateway's routes,
// generated from the route table the handler serves (also served at
// GET /api/openapi.json).
func (s *Server) OpenAPI() []byte { return s.openapi }

// buildOpenAPI generates the document: one operation per route, with its
// parameters, request body schema, success content type, the role it
// needs (x-role) and the shared Error response.
func (s *Server) buildOpenAPI() []byte {
	paths := map[string]map[string]any{}
	for _, rt := range s.routes {
		op := map[string]any{
			"operationId": operationID(rt),
			"summary":     rt.summary,
			"x-role":      rt.role.String(),
			"responses":   responses(rt),
		}
		if len(s.verifier) > 0 {
			op["security"] = []any{map[string]any{"bearer": []string{}}}
		}
		var params []any
		for _, p := range rt.params {
			params = append(params, map[string]any{"name": p.name, "in": p.in, "required": p.required || p.in == "path",
				"description": p.desc, "schema": map[string]any{"type": p.typ}})
		}
		if params != nil {
			op["parameters"] = params
		}
		if rt.body != nil {
			op["requestBody"] = map[string]any{"required": true, "content": map[string]any{"application/json": map[string]any{"schema": rt.body}}}
		}
		if paths[rt.path] == nil {
			paths[rt.path] = map[string]any{}
		}
		paths[rt.path][strings.ToLower(rt.method)] = op
	}
	doc := map[string]any{
		"openapi": "3.1.0",
		"info": map[string]any{"title": "mcpkit resp admin", "version": "1.0.0",
			"description": "The management gateway of one Redis-protocol server: roles viewer < operator < admin; every POST, every refused request and every read that discloses data (revealed values, snapshots, MONITOR) is audited; destructive actions need confirmed: true."},
		"paths": paths,
		"components": map[string]any{
			"securitySchemes": map[string]any{"bearer": map[string]any{"type": "http", "scheme": "bearer"}},
			"schemas": map[string]any{"Error": map[string]any{
				"type": "object", "required": []string{"error"},
				"properties": map[string]any{"error": map[string]any{
					"type": "object", "required": []string{"kind", "message"},
					"properties": map[string]any{
						"kind":    map[string]any{"type": "string"},
						"message": map[string]any{"type": "string"},
					},
				}},
			}},
			"responses": map[string]any{"Error": map[string]any{
				"description": "refused or failed; kind says why",
				"content":     map[string]any{"application/json": map[string]any{"schema": map[string]any{"$ref": "#/components/schemas/Error"}}},
			}},
		},
	}
	b, err := json.Marshal(doc)
	if err != nil {
		panic("respadmin: the OpenAPI document does not marshal: " + err.Error()) // only maps of JSON values
	}
	return b
}

// operationID is "get_api_keys_key" for GET /api/keys/{key}.
func operationID(rt *route) string {
	id := strings.ToLower(rt.method) + strings.NewReplacer("/", "_", "{", "", "}", "", ".", "_").Replace(rt.path)
	return id
}

// responses are a route's documented responses.
func responses(rt *route) map[string]any {
	out := map[string]any{}
	produces := rt.produces
	if produces == "" {
		produces = "application/json"
	}
	if rt.path == "/api/live" {
		out["101"] = map[string]any{"description": "switched to WebSocket: JSON text frames with type, seq and time"}
	} else {
		out["200"] = map[string]any{"description": "success", "content": map[string]any{produces: map[string]any{"schema": map[string]any{}}}}
	}
	for _, code := range []int{400, 401, 403, 404, 409, 413, 429, 502, 503} {
		out[strconv.Itoa(code)] = map[string]any{"$ref": "#/components/responses/Error"}
	}
	return out
}
