package action

import (
	"net/http"
	"slices"
	"strconv"
	"strings"

	segjson "github.com/segmentio/encoding/json"
)

// openAPI returns the OpenAPI 3.1 document of the app's web actions under
// prefix: for each, its path (":id" as "{id}"), method, path params, the
// other inputs as query params (GET, DELETE) or a JSON request body schema
// (the input schema without the path params), the 200 response and every
// error status, whose body is the shared Error schema.
func (a *App) openAPI(prefix string) []byte {
	paths := map[string]map[string]any{}
	for _, act := range a.Actions() {
		if act.Web == nil {
			continue
		}
		segs, _ := parseRoute(act.Web.Route)
		parts := make([]string, len(segs))
		inPath := map[string]bool{}
		for i, s := range segs {
			parts[i] = s.text
			if s.param {
				parts[i] = "{" + s.text + "}"
				inPath[s.text] = true
			}
		}
		p := prefix + "/" + strings.Join(parts, "/")
		if paths[p] == nil {
			paths[p] = map[string]any{}
		}
		paths[p][strings.ToLower(act.Web.Method)] = operation(act, inPath)
	}
	doc := map[string]any{
		"openapi": "3.1.0",
		"info":    map[string]any{"title": a.name, "description": a.description, "version": "1.0.0"},
		"paths":   paths,
		"components": map[string]any{
			"schemas": map[string]any{"Error": map[string]any{
				"type":     "object",
				"required": []string{"error"},
				"properties": map[string]any{"error": map[string]any{
					"type":     "object",
					"required": []string{"kind", "message"},
					"properties": map[string]any{
						"kind":    map[string]any{"type": "string", "enum": kinds()},
						"message": map[string]any{"type": "string"},
						"field":   map[string]any{"type": "string", "description": "the param at fault"},
					},
				}},
			}},
			"responses": map[string]any{"Error": map[string]any{
				"description": "the action failed; kind says why",
				"content":     map[string]any{"application/json": map[string]any{"schema": map[string]any{"$ref": "#/components/schemas/Error"}}},
			}},
		},
	}
	b, err := segjson.Marshal(doc)
	if err != nil {
		panic("action: the OpenAPI document does not marshal: " + err.Error()) // only maps of JSON values and checked schemas
	}
	return b
}

// operation is the OpenAPI operation of act; inPath holds its path params.
func operation(act *Action, inPath map[string]bool) map[string]any {
	schema := schemaMap(act)
	props, _ := schema["properties"].(map[string]any)
	required, _ := schema["required"].([]any)
	isRequired := func(name string) bool { return slices.Contains(required, any(name)) }
	var params []any
	for _, name := range sortedKeys(props) {
		if !inPath[name] {
			continue
		}
		params = append(params, map[string]any{"name": name, "in": "path", "required": true, "schema": props[name]})
		delete(props, name)
	}
	op := map[string]any{
		"operationId": act.Name,
		"summary":     act.Name,
		"description": act.Description,
		"tags":        []string{strings.SplitN(act.Name, ":", 2)[0]},
	}
	if act.Web.Method == http.MethodGet || act.Web.Method == http.MethodDelete {
		for _, name := range sortedKeys(props) {
			params = append(params, map[string]any{"name": name, "in": "query", "required": isRequired(name), "schema": props[name]})
		}
	} else if len(props) > 0 {
		var req []any
		for _, r := range required {
			if !inPath[r.(string)] {
				req = append(req, r)
			}
		}
		if req == nil {
			delete(schema, "required")
		} else {
			schema["required"] = req
		}
		op["requestBody"] = map[string]any{
			"required": len(req) > 0,
			"content": map[string]any{
				"application/json":                  map[string]any{"schema": schema},
				"application/x-www-form-urlencoded": map[string]any{"schema": schema},
			},
		}
	}
	if params != nil {
		op["parameters"] = params
	}
	responses := map[string]any{"200": map[string]any{
		"description": "the action's result",
		"content":     map[string]any{"application/json": map[string]any{"schema": map[string]any{}}},
	}}
	for _, k := range kinds() {
		responses[strconv.Itoa(Kind(k).HTTPStatus())] = map[string]any{"$ref": "#/components/responses/Error"}
	}
	op["responses"] = responses
	return op
}

// schemaMap is act's input schema as a JSON tree, to edit.
func schemaMap(act *Action) map[string]any {
	b, err := segjson.Marshal(act.InputSchema())
	if err != nil {
		panic("action: an input schema does not marshal: " + err.Error()) // resolved when added
	}
	var m map[string]any
	if err := segjson.Unmarshal(b, &m); err != nil {
		panic("action: an input schema does not unmarshal: " + err.Error())
	}
	return m
}

// kinds lists the error kinds, in order.
func kinds() []string {
	return slices.Sorted(func(yield func(string) bool) {
		for k := range kindStatus {
			if !yield(string(k)) {
				return
			}
		}
	})
}
