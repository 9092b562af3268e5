package action

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
	segjson "github.com/segmentio/encoding/json"
)

// SchemaAdjuster is implemented by an inputs type (on its pointer) that
// adds to its derived schema what jsonschema-go cannot read from struct
// tags: constraints such as MinLength, Maximum, Enum, Pattern, Default, or
// Format. Adjust is called once, when the action is added; the adjusted
// schema is what inputs are validated against and what every transport
// advertises.
type SchemaAdjuster interface {
	AdjustSchema(s *jsonschema.Schema) error
}

// Redacted is what a secret input's value is replaced with.
const Redacted = "[redacted]"

// inputSchema is an action's derived schema, resolved once.
type inputSchema struct {
	typ      reflect.Type // the struct type (nil: no inputs)
	schema   *jsonschema.Schema
	resolved *jsonschema.Resolved
	props    map[string]*jsonschema.Schema
	checks   map[string]*jsonschema.Resolved // each property resolved alone (absent: it does not resolve alone)
	secrets  map[string]bool
	// textJSON names the inputs whose Go type has no JSON Schema: they are
	// advertised as strings holding the value's JSON text (see
	// fallbackSchema), which decode parses.
	textJSON map[string]bool
}

var emptySchema = &jsonschema.Schema{Type: "object", Properties: map[string]*jsonschema.Schema{}}

// deriveSchema derives the schema of inputs, a pointer to a struct type
// (nil: no inputs).
func deriveSchema(inputs any) (*inputSchema, error) {
	if inputs == nil {
		return &inputSchema{schema: emptySchema, props: map[string]*jsonschema.Schema{}}, nil
	}
	t := reflect.TypeOf(inputs)
	if t.Kind() != reflect.Pointer || t.Elem().Kind() != reflect.Struct {
		return nil, fmt.Errorf("want a pointer to a struct type, got %v", t)
	}
	t = t.Elem()
	s, err := jsonschema.ForType(t, nil)
	var textJSON map[string]bool
	if err != nil {
		if s, textJSON, err = fallbackSchema(t); err != nil {
			return nil, err
		}
	}
	is := &inputSchema{typ: t, schema: s, props: s.Properties, checks: map[string]*jsonschema.Resolved{}, secrets: map[string]bool{}, textJSON: textJSON}
	if is.props == nil {
		is.props = map[string]*jsonschema.Schema{}
	}
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Tag.Get("action") == "" {
			continue
		}
		if f.Tag.Get("action") != "secret" {
			return nil, fmt.Errorf("field %s: unknown action tag %q (want \"secret\")", f.Name, f.Tag.Get("action"))
		}
		name := jsonName(f)
		p := is.props[name]
		if p == nil {
			return nil, fmt.Errorf("field %s: tagged secret but not an input", f.Name)
		}
		is.secrets[name] = true
		p.Format, p.WriteOnly = "password", true
	}
	if adj, ok := inputs.(SchemaAdjuster); ok {
		if err := adj.AdjustSchema(s); err != nil {
			return nil, fmt.Errorf("adjust schema: %w", err)
		}
	}
	if is.resolved, err = s.Resolve(&jsonschema.ResolveOptions{ValidateDefaults: true}); err != nil {
		return nil, err
	}
	for name, p := range is.props {
		if r, err := p.Resolve(nil); err == nil {
			is.checks[name] = r
		}
	}
	return is, nil
}

// fallbackSchema derives struct type t's schema field by field, for a
// type jsonschema-go refuses as a whole (a map with integer keys, say): a
// field whose own type has no JSON Schema becomes a string holding the
// value's JSON text, so that every action registers and every input can
// still be given. It returns those fields' names.
func fallbackSchema(t reflect.Type) (*jsonschema.Schema, map[string]bool, error) {
	s := &jsonschema.Schema{Type: "object", Properties: map[string]*jsonschema.Schema{}, AdditionalProperties: &jsonschema.Schema{Not: &jsonschema.Schema{}}}
	textJSON := map[string]bool{}
	for i := range t.NumField() {
		f := t.Field(i)
		tag, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		if !f.IsExported() || tag == "-" {
			continue
		}
		name := jsonName(f)
		p, err := jsonschema.ForType(f.Type, nil)
		if err != nil {
			p = &jsonschema.Schema{Type: "string"}
			textJSON[name] = true
		}
		p.Description = f.Tag.Get("jsonschema")
		if textJSON[name] {
			p.Description = strings.TrimSpace(p.Description + " (the value's JSON text: its type has no JSON Schema)")
		}
		s.Properties[name] = p
		if !strings.Contains(opts, "omitempty") && !strings.Contains(opts, "omitzero") {
			s.Required = append(s.Required, name)
		}
	}
	return s, textJSON, nil
}

// jsonName is the JSON member name of a struct field.
func jsonName(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
	if name == "" {
		return f.Name
	}
	return name
}

// parseParams parses raw params (a JSON object; empty or null is {}) into
// a map of their decoded values.
func parseParams(raw json.RawMessage) (map[string]any, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return map[string]any{}, nil
	}
	if raw[0] != '{' {
		return nil, paramError(KindInvalidParam, "", "the params must be a JSON object")
	}
	var m map[string]any
	if err := segjson.Unmarshal(raw, &m); err != nil {
		return nil, paramError(KindInvalidParam, "", "the params are not valid JSON: %v", err)
	}
	return m, nil
}

// decode validates params (raw, parsed as m) against the schema and
// decodes them strictly into a fresh inputs struct, returning a pointer to
// it (nil when there are no inputs). Every failure is an *Error naming the
// field when there is one; a secret's value never appears in it.
func (is *inputSchema) decode(raw json.RawMessage, m map[string]any) (any, error) {
	for _, k := range sortedKeys(m) {
		p := is.props[k]
		if p == nil {
			return nil, paramError(KindInvalidParam, k, "unknown param (not an input of this action)")
		}
		if r := is.checks[k]; r != nil {
			if err := r.Validate(m[k]); err != nil {
				return nil, is.invalid(k, m[k], err)
			}
		}
	}
	for _, k := range is.schema.Required {
		if _, ok := m[k]; !ok {
			return nil, paramError(KindMissingParam, k, "missing required param")
		}
	}
	if is.typ == nil {
		return nil, nil
	}
	if err := is.resolved.Validate(m); err != nil {
		return nil, paramError(KindInvalidParam, "", "the params do not match the input schema: %s", innermost(err))
	}
	in := reflect.New(is.typ).Interface()
	if len(bytes.TrimSpace(raw)) == 0 {
		return in, nil
	}
	if len(is.textJSON) > 0 {
		var err error
		if raw, err = is.parseTextJSON(m); err != nil {
			return nil, err
		}
	}
	if _, err := segjson.Parse(raw, in, segjson.DisallowUnknownFields|segjson.DontMatchCaseInsensitiveStructFields); err != nil {
		var te *segjson.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			field, _, _ := strings.Cut(te.Field, ".")
			return nil, is.invalid(field, nil, fmt.Errorf("cannot decode %s into %s", te.Value, te.Type))
		}
		return nil, paramError(KindInvalidParam, "", "cannot decode the params: %v", err)
	}
	return in, nil
}

// parseTextJSON returns params m as JSON with the text of every textJSON
// input replaced by the value it holds.
func (is *inputSchema) parseTextJSON(m map[string]any) (json.RawMessage, error) {
	out := make(map[string]any, len(m))
	for k, v := range m {
		if text, ok := v.(string); ok && is.textJSON[k] {
			var parsed any
			if err := segjson.Unmarshal([]byte(text), &parsed); err != nil {
				return nil, is.invalid(k, nil, fmt.Errorf("not JSON text: %v", err))
			}
			v = parsed
		}
		out[k] = v
	}
	raw, err := json.Marshal(out)
	if err != nil {
		return nil, paramError(KindInvalidParam, "", "cannot re-encode the params: %v", err)
	}
	return raw, nil
}

// invalid is the invalid_param error for field, whose value v (nil when
// not known) failed with err; a secret's reason is withheld, as it may
// quote the value. A long string value that the reason shows unquoted
// (the validator's type errors do) is echoed as a prefix, as quoted ones
// are ([clipMessage]).
func (is *inputSchema) invalid(field string, v any, err error) *Error {
	if is.secrets[field] {
		return paramError(KindInvalidParam, field, "invalid value (the reason is withheld: the param is secret)")
	}
	msg := clipQuoted(innermost(err))
	if s, ok := v.(string); ok && len(s) > EchoChars {
		msg = strings.Replace(msg, s, echo(s), 1)
	}
	return paramError(KindInvalidParam, field, "%s", msg)
}

// innermost returns the message of the innermost wrapped error (the
// validator wraps its reason once per schema level).
func innermost(err error) string {
	for {
		next := errors.Unwrap(err)
		if next == nil {
			return err.Error()
		}
		err = next
	}
}

// Redacted returns a copy of params with every secret input's value
// replaced by [Redacted] (params itself when the action has no secrets).
func (act *Action) Redacted(params map[string]any) map[string]any {
	if act.schema == nil || len(act.schema.secrets) == 0 {
		return params
	}
	out := make(map[string]any, len(params))
	for k, v := range params {
		if act.schema.secrets[k] {
			v = Redacted
		}
		out[k] = v
	}
	return out
}

// secretValues lists the string values of the secret inputs in params,
// which scrub removes from messages.
func (is *inputSchema) secretValues(params map[string]any) []string {
	var out []string
	for k := range is.secrets {
		if s, ok := params[k].(string); ok && s != "" {
			out = append(out, s)
		}
	}
	return out
}

// scrub replaces every secret value in msg by [Redacted], and the prefix
// of a long one that a message may echo instead of it ([echo]).
func scrub(msg string, secrets []string) string {
	for _, s := range secrets {
		msg = strings.ReplaceAll(msg, s, Redacted)
		if p, ok := echoPrefix(s); ok {
			msg = strings.ReplaceAll(msg, p, Redacted)
			if q := strconv.Quote(p); q[1:len(q)-1] != p {
				msg = strings.ReplaceAll(msg, q[1:len(q)-1], Redacted)
			}
		}
	}
	return msg
}

// coerce turns the text values a transport received for the param name
// (path, query, form or command line give text) into the JSON value its
// schema wants: integers, numbers and booleans parsed, strings kept,
// arrays from each value (a repeated param), anything else parsed as JSON.
// A param that is not an input stays text (decode then refuses it).
func (is *inputSchema) coerce(name string, values []string) (any, error) {
	p := is.props[name]
	if p == nil {
		if len(values) == 1 {
			return values[0], nil
		}
		return nil, paramError(KindInvalidParam, name, "unknown param (not an input of this action)")
	}
	if schemaType(p) == "array" {
		out := make([]any, len(values))
		for i, v := range values {
			var err error
			item := p.Items
			if item == nil {
				item = &jsonschema.Schema{}
			}
			if out[i], err = coerceOne(item, v); err != nil {
				return nil, is.invalid(name, nil, err)
			}
		}
		return out, nil
	}
	if len(values) != 1 {
		return nil, paramError(KindInvalidParam, name, "given %d times; it takes one value", len(values))
	}
	v, err := coerceOne(p, values[0])
	if err != nil {
		return nil, is.invalid(name, nil, err)
	}
	return v, nil
}

// coerceOne converts text to the JSON value schema s wants.
func coerceOne(s *jsonschema.Schema, text string) (any, error) {
	switch schemaType(s) {
	case "string":
		return text, nil
	case "integer":
		n, err := strconv.ParseInt(text, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%q is not an integer", text)
		}
		return float64(n), nil
	case "number":
		f, err := strconv.ParseFloat(text, 64)
		if err != nil {
			return nil, fmt.Errorf("%q is not a number", text)
		}
		return f, nil
	case "boolean":
		b, err := strconv.ParseBool(text)
		if err != nil {
			return nil, fmt.Errorf("%q is not a boolean", text)
		}
		return b, nil
	}
	var v any
	if err := segjson.Unmarshal([]byte(text), &v); err != nil {
		return nil, fmt.Errorf("not valid JSON: %v", err)
	}
	return v, nil
}

// schemaType is the one non-null type s allows ("" when it allows several
// or does not say).
func schemaType(s *jsonschema.Schema) string {
	if s.Type != "" {
		return s.Type
	}
	var t string
	for _, x := range s.Types {
		if x == "null" {
			continue
		}
		if t != "" {
			return ""
		}
		t = x
	}
	return t
}
