package mcpcore

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/mcpkit/mcpkit/internal/fastpath"
	"github.com/mcpkit/mcpkit/pkg/jsonscan"
	segjson "github.com/segmentio/encoding/json"
)

// argSchema validates one tool's arguments against its input schema,
// resolved once when the tool is added, and says which argument is wrong
// when they do not validate.
type argSchema struct {
	schema   *jsonschema.Schema
	resolved *jsonschema.Resolved
	defaults bool // some property has a default to apply
	// subs resolves, once, the subschemas that locate descends into (object
	// properties, additional properties, array items); a subschema that does
	// not resolve alone (a $ref to its root) is absent and ends the descent.
	subs map[*jsonschema.Schema]*jsonschema.Resolved
}

// newArgSchema takes the tool's declared input schema (nil: derived from
// In with derive) and checks that it is a resolvable object schema.
func newArgSchema(declared any, derive func() (*jsonschema.Schema, error)) (*argSchema, error) {
	var s *jsonschema.Schema
	var err error
	if declared == nil {
		s, err = derive()
	} else {
		s, err = toSchema(declared)
	}
	if err != nil {
		return nil, fmt.Errorf("input schema: %w", err)
	}
	if s.Type != "object" {
		return nil, fmt.Errorf(`input schema: the arguments must be an object (type "object"), not %s: use a struct (struct{} for none) or a map as the argument type`, describeType(s))
	}
	resolved, err := s.Resolve(&jsonschema.ResolveOptions{ValidateDefaults: true})
	if err != nil {
		return nil, fmt.Errorf("input schema: %w", err)
	}
	a := &argSchema{schema: s, resolved: resolved, defaults: hasDefaults(s), subs: map[*jsonschema.Schema]*jsonschema.Resolved{}}
	a.index(s)
	return a, nil
}

// index resolves, alone, every subschema locate may descend into.
func (a *argSchema) index(s *jsonschema.Schema) {
	for _, sub := range children(s) {
		if _, seen := a.subs[sub]; seen {
			continue
		}
		if r, err := sub.Resolve(nil); err == nil {
			a.subs[sub] = r
		}
		a.index(sub)
	}
}

// hasDefaults reports whether a property at or below s has a default,
// which is what ApplyDefaults fills in.
func hasDefaults(s *jsonschema.Schema) bool {
	for _, p := range s.Properties {
		if p.Default != nil || hasDefaults(p) {
			return true
		}
	}
	return false
}

// children lists the subschemas an argument value nests in: properties,
// additional properties, items and prefix items.
func children(s *jsonschema.Schema) []*jsonschema.Schema {
	var out []*jsonschema.Schema
	for _, k := range sortedKeys(s.Properties) {
		out = append(out, s.Properties[k])
	}
	for _, sub := range []*jsonschema.Schema{s.AdditionalProperties, s.Items, s.AdditionalItems} {
		if sub != nil {
			out = append(out, sub)
		}
	}
	return append(out, s.PrefixItems...)
}

// decodePrefix is a [fastpath.ArgumentsPrefixDecoder]'s DecodeArgumentsPrefix for
// a tool's argument type, returning the decoded value.
type decodePrefix func(b []byte) (end int, args any, ok bool)

// prefixDecoder returns decodePrefix for In, or nil when *In is not an
// ArgumentsPrefixDecoder.
func prefixDecoder[In any]() decodePrefix {
	if _, ok := any(new(In)).(fastpath.ArgumentsPrefixDecoder); !ok {
		return nil
	}
	return func(b []byte) (int, any, bool) {
		var in In
		end, ok := any(&in).(fastpath.ArgumentsPrefixDecoder).DecodeArgumentsPrefix(b)
		if !ok {
			return 0, nil, false
		}
		return end, in, true
	}
}

// decodeArguments decodes raw into v as the host decodes tool arguments: exact
// (case-sensitive) member names, no unknown member. A failure is a
// [*ParamError], with the member's path when the decoder names it. Argument
// types that decode their own arguments reach it as
// fastpath.DecodeArguments.
func decodeArguments(raw json.RawMessage, v any) error {
	_, err := segjson.Parse(raw, v, segjson.DisallowUnknownFields|segjson.DontMatchCaseInsensitiveStructFields)
	if err == nil {
		return nil
	}
	if name, ok := unknownMember(err); ok {
		for m := jsonscan.NewMembers(raw); m.Next(); {
			if jsonscan.KeyIs(m.Key, name) {
				return &ParamError{Path: "/" + pointerEscape(name), Reason: "unexpected argument (not in the tool's input schema)"}
			}
		}
		return &ParamError{Reason: fmt.Sprintf("unexpected member %q (not in the tool's input schema)", name)}
	}
	return decodeError(err)
}

// unknownMember returns the member named by the decoder's unknown-field
// error (which has no type of its own).
func unknownMember(err error) (string, bool) {
	quoted, ok := strings.CutPrefix(err.Error(), "json: unknown field ")
	if !ok {
		return "", false
	}
	name, uerr := strconv.Unquote(quoted)
	return name, uerr == nil
}

// decodeArgs validates raw tool arguments and decodes them into In,
// strictly: exact (case-sensitive) field names, no unknown field, or hands
// them to In's own [fastpath.ArgumentsDecoder]. Every failure is a [*ParamError].
func decodeArgs[In any](a *argSchema, raw json.RawMessage) (In, error) {
	var in In
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		raw = []byte("{}")
	}
	if raw[0] != '{' {
		return in, &ParamError{Reason: "the arguments must be a JSON object"}
	}
	if d, ok := any(&in).(fastpath.ArgumentsDecoder); ok {
		if err := d.DecodeArguments(raw); err != nil {
			var pe *ParamError
			if errors.As(err, &pe) {
				return in, pe
			}
			return in, &ParamError{Reason: err.Error()}
		}
		return in, nil
	}
	var v any
	if err := segjson.Unmarshal(raw, &v); err != nil {
		var te *segjson.UnmarshalTypeError
		if errors.As(err, &te) { // valid JSON: a number beyond float64's range
			return in, decodeError(err)
		}
		return in, &ParamError{Reason: "the arguments are not valid JSON: " + err.Error()}
	}
	if a.defaults {
		if err := a.resolved.ApplyDefaults(&v); err != nil {
			return in, &ParamError{Reason: "cannot apply the schema's defaults: " + innermost(err)}
		}
		var err error
		if raw, err = segjson.Marshal(v); err != nil {
			return in, &ParamError{Reason: "cannot apply the schema's defaults: " + err.Error()}
		}
	}
	if err := a.resolved.Validate(v); err != nil {
		path, reason := a.locate(a.schema, a.resolved, v, "")
		return in, &ParamError{Path: path, Reason: reason}
	}
	return in, decodeArguments(raw, &in)
}

// decodeError turns an error of the strict decoding into a [*ParamError],
// with the path of the field when the decoder names it.
func decodeError(err error) *ParamError {
	var te *segjson.UnmarshalTypeError
	if errors.As(err, &te) && te.Field != "" {
		return &ParamError{Path: "/" + strings.ReplaceAll(te.Field, ".", "/"), Reason: typeErrorReason(te)}
	}
	return &ParamError{Reason: err.Error()}
}

// typeErrorReason says in JSON's words, never Go's, why the decoder could
// not store a value: a number out of the argument's range (1e400 for any
// number, 1e30 for an integer), a fraction for an integer, or a value of
// another JSON type.
func typeErrorReason(te *segjson.UnmarshalTypeError) string {
	lit, err := strconv.Unquote(te.Value) // the input from the value on, quoted; or "number 256 overflows"
	if err != nil {
		lit = te.Value
	}
	want := goKindJSON(te.Type)
	lit = numberPrefix(strings.TrimPrefix(lit, "number "))
	f, err := strconv.ParseFloat(lit, 64)
	if lit == "" || err != nil && !errors.Is(err, strconv.ErrRange) {
		return fmt.Sprintf("got %s, want %s", literalType(te.Value), want)
	}
	integral := err != nil || f == math.Trunc(f) // beyond float64, a number has no fraction
	switch k := te.Type.Kind(); {
	case (k >= reflect.Int && k <= reflect.Uintptr) && !integral:
		return fmt.Sprintf("%s is not an integer", briefText(lit))
	case k >= reflect.Int && k <= reflect.Int64:
		bits := te.Type.Bits()
		return fmt.Sprintf("%s is out of range: an integer from %d to %d", briefText(lit), int64(-1)<<(bits-1), int64(1)<<(bits-1)-1)
	case k >= reflect.Uint && k <= reflect.Uintptr:
		return fmt.Sprintf("%s is out of range: an integer from 0 to %d", briefText(lit), uint64(1)<<te.Type.Bits()-1)
	case k == reflect.Float32 || k == reflect.Float64 || k == reflect.Interface:
		return fmt.Sprintf("%s is out of range: a number's magnitude is at most %g", briefText(lit), math.MaxFloat64)
	}
	return fmt.Sprintf("got number, want %s", want)
}

// numberPrefix returns the JSON number s begins with ("" if none).
func numberPrefix(s string) string {
	end := strings.IndexFunc(s, func(r rune) bool { return !strings.ContainsRune("+-.0123456789eE", r) })
	if end < 0 {
		return s
	}
	return s[:end]
}

// literalType names the JSON type of the value the decoder's quoted text
// begins with.
func literalType(quoted string) string {
	lit, err := strconv.Unquote(quoted)
	if err != nil {
		lit = quoted
	}
	switch lit = strings.TrimSpace(lit); {
	case strings.HasPrefix(lit, `"`):
		return "string"
	case strings.HasPrefix(lit, "{"):
		return "object"
	case strings.HasPrefix(lit, "["):
		return "array"
	case strings.HasPrefix(lit, "true"), strings.HasPrefix(lit, "false"):
		return "boolean"
	case strings.HasPrefix(lit, "null"):
		return "null"
	}
	return "number"
}

// goKindJSON names the JSON type a Go type decodes from.
func goKindJSON(t reflect.Type) string {
	switch k := t.Kind(); {
	case k >= reflect.Int && k <= reflect.Uintptr:
		return "integer"
	case k == reflect.Float32 || k == reflect.Float64:
		return "number"
	case k == reflect.String:
		return "string"
	case k == reflect.Bool:
		return "boolean"
	case k == reflect.Slice || k == reflect.Array:
		return "array"
	case k == reflect.Map || k == reflect.Struct:
		return "object"
	}
	return "a JSON value"
}

// locate finds the deepest argument of v (which fails s, resolved as r)
// that fails its own subschema, and says why: a missing required property,
// an unexpected one, or the validator's reason at that place.
func (a *argSchema) locate(s *jsonschema.Schema, r *jsonschema.Resolved, v any, path string) (string, string) {
	switch x := v.(type) {
	case map[string]any:
		for _, k := range sortedKeys(x) {
			sub := s.Properties[k]
			if sub == nil {
				sub = s.AdditionalProperties
			}
			if sub == nil {
				continue
			}
			sr := a.subs[sub]
			if sr == nil || sr.Validate(x[k]) == nil {
				continue
			}
			if s.Properties[k] == nil && isFalse(sub) {
				return path + "/" + pointerEscape(k), "unexpected argument (not in the tool's input schema)"
			}
			return a.locate(sub, sr, x[k], path+"/"+pointerEscape(k))
		}
		for _, k := range s.Required {
			if _, ok := x[k]; !ok {
				return path + "/" + pointerEscape(k), "missing required argument"
			}
		}
	case []any:
		for i, e := range x {
			sub := s.Items
			if i < len(s.PrefixItems) {
				sub = s.PrefixItems[i]
			}
			if sub == nil {
				continue
			}
			if sr := a.subs[sub]; sr != nil && sr.Validate(e) != nil {
				return a.locate(sub, sr, e, path+"/"+strconv.Itoa(i))
			}
		}
	}
	if want := schemaTypes(s); len(want) > 0 && !slices.ContainsFunc(want, func(t string) bool { return jsonTypeIs(v, t) }) {
		// The validator's own text names Go reflection values; say it in
		// JSON's words.
		return path, fmt.Sprintf("got %s, want %s", typedValue(v), strings.Join(want, " or "))
	}
	if reason, ok := violation(s, v); ok {
		return path, reason
	}
	return path, innermost(r.Validate(v))
}

// violation says which of s's own rules v breaks, naming the value and the
// rule briefly ("-0.1 is below 0"): the validator's text prints numbers as
// fractions and Go values. It reports false for a rule it does not
// describe, which the validator's text then says.
func violation(s *jsonschema.Schema, v any) (string, bool) {
	if len(s.Enum) > 0 && !slices.ContainsFunc(s.Enum, func(e any) bool { return reflect.DeepEqual(asJSON(e), v) }) {
		opts := make([]string, len(s.Enum))
		for i, e := range s.Enum {
			opts[i] = briefValue(asJSON(e))
		}
		return fmt.Sprintf("%s is not one of %s", briefValue(v), strings.Join(opts, ", ")), true
	}
	switch x := v.(type) {
	case float64:
		return numberViolation(s, x)
	case string:
		n := utf8.RuneCountInString(x)
		switch {
		case s.MinLength != nil && n < *s.MinLength && n == 0:
			return `"" is empty`, true
		case s.MinLength != nil && n < *s.MinLength:
			return fmt.Sprintf("%s is shorter than %d characters", briefValue(x), *s.MinLength), true
		case s.MaxLength != nil && n > *s.MaxLength:
			return fmt.Sprintf("%s (%d characters) is longer than %d", briefValue(x), n, *s.MaxLength), true
		}
	case []any:
		switch {
		case s.MinItems != nil && len(x) < *s.MinItems && len(x) == 0:
			return fmt.Sprintf("[] is empty: at least %d item(s)", *s.MinItems), true
		case s.MinItems != nil && len(x) < *s.MinItems:
			return fmt.Sprintf("%d items are fewer than %d", len(x), *s.MinItems), true
		case s.MaxItems != nil && len(x) > *s.MaxItems:
			return fmt.Sprintf("%d items are more than %d", len(x), *s.MaxItems), true
		}
	}
	return "", false
}

// asJSON returns a schema's value as an argument decodes (a named string
// type's value as a string, an int as a float64), to compare it with one.
func asJSON(x any) any {
	b, err := json.Marshal(x)
	if err != nil {
		return x
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return x
	}
	return v
}

// numberViolation is violation for a number.
func numberViolation(s *jsonschema.Schema, x float64) (string, bool) {
	val := briefValue(x)
	switch {
	case s.Minimum != nil && x < *s.Minimum:
		return fmt.Sprintf("%s is below %s", val, briefValue(*s.Minimum)), true
	case s.ExclusiveMinimum != nil && x <= *s.ExclusiveMinimum:
		return fmt.Sprintf("%s is not above %s", val, briefValue(*s.ExclusiveMinimum)), true
	case s.Maximum != nil && x > *s.Maximum:
		return fmt.Sprintf("%s is above %s", val, briefValue(*s.Maximum)), true
	case s.ExclusiveMaximum != nil && x >= *s.ExclusiveMaximum:
		return fmt.Sprintf("%s is not below %s", val, briefValue(*s.ExclusiveMaximum)), true
	}
	return "", false
}

// typedValue names v's JSON type and, for a scalar, v itself, briefly
// (`string "1"`, "number 2.5", "null", "array").
func typedValue(v any) string {
	switch v.(type) {
	case float64, string, bool:
		return jsonType(v) + " " + briefValue(v)
	}
	return jsonType(v)
}

// briefLen is how much of a value a message quotes.
const briefLen = 40

// briefValue writes an argument value for a message: a number as JSON
// writes it, a string quoted and cut to briefLen bytes, a container by its
// JSON type.
func briefValue(v any) string {
	switch x := v.(type) {
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64)
	case string:
		return strconv.Quote(briefText(x))
	case bool:
		return strconv.FormatBool(x)
	case nil:
		return "null"
	}
	return jsonType(v)
}

// briefText cuts s to briefLen bytes (at a character boundary), marking
// the cut with "…".
func briefText(s string) string {
	if len(s) <= briefLen {
		return s
	}
	cut := briefLen
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// schemaTypes lists the JSON types s allows (none when it does not say).
func schemaTypes(s *jsonschema.Schema) []string {
	if s.Type != "" {
		return []string{s.Type}
	}
	return s.Types
}

// jsonType names the JSON type of a decoded argument value.
func jsonType(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case string:
		return "string"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	case float64:
		if x == math.Trunc(x) {
			return "integer"
		}
		return "number"
	}
	return fmt.Sprintf("%T", v)
}

// jsonTypeIs reports whether v is of JSON Schema type t ("integer" is a
// "number" too).
func jsonTypeIs(v any, t string) bool {
	got := jsonType(v)
	return got == t || t == "number" && got == "integer"
}

// innermost returns the message of the innermost wrapped error: the
// validator wraps its reason in one "validating <schema>:" per level.
func innermost(err error) string {
	for {
		next := errors.Unwrap(err)
		if next == nil {
			return err.Error()
		}
		err = next
	}
}

// isFalse reports whether s is the schema false, which jsonschema-go holds
// as {"not": {}}.
func isFalse(s *jsonschema.Schema) bool {
	return s.Not != nil && reflect.ValueOf(*s.Not).IsZero()
}

func pointerEscape(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

// toSchema converts a schema given as a *jsonschema.Schema, a map, or raw
// JSON into a fresh *jsonschema.Schema.
func toSchema(v any) (*jsonschema.Schema, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	s := new(jsonschema.Schema)
	if err := json.Unmarshal(data, s); err != nil {
		return nil, err
	}
	return s, nil
}

func describeType(s *jsonschema.Schema) string {
	switch {
	case s.Type != "":
		return fmt.Sprintf("type %q", s.Type)
	case len(s.Types) > 0:
		return fmt.Sprintf("types %q", s.Types)
	}
	return "an untyped schema (argument type any?)"
}

// briefPathSegments is how many segments of a long path a message keeps at
// each end; a path of up to four times as many is kept whole.
const briefPathSegments = 4

// briefPath shortens a deep JSON Pointer for a message, keeping its first
// and last segments around "…" ("/doc/a/a/…/a/a/a"): a value nested
// hundreds of levels deep would otherwise fill the message with its path.
// structuredContent.error.path keeps the whole pointer.
func briefPath(p string) string {
	segs := strings.Split(p, "/")[1:]
	if len(segs) <= 4*briefPathSegments {
		return p
	}
	head := strings.Join(segs[:briefPathSegments], "/")
	tail := strings.Join(segs[len(segs)-briefPathSegments:], "/")
	return fmt.Sprintf("/%s/…(%d levels)…/%s", head, len(segs)-2*briefPathSegments, tail)
}
