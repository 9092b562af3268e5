package actions

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// DefaultMarkdownDepth is the nesting depth rendered as markdown when
// neither the configuration nor MCP_MARKDOWN_DEPTH_LIMIT sets one.
const DefaultMarkdownDepth = 5

// maxMarkdownDepth bounds the configured depth: deeper than this a result
// is better read as JSON anyway.
const maxMarkdownDepth = 32

// RenderMarkdown renders the JSON document data as markdown by its shape,
// with the rules of the actions' MARKDOWN response format:
//
//   - a flat object (no object or array values): a bulleted list of
//     "- **key**: value";
//   - a nested object: its scalar members as that list, then each object or
//     array member under a heading of its key (## for the first level,
//     one more # per level up to ######, then **key** in bold) and rendered
//     in turn;
//   - an array of objects with the same keys and scalar values: a table,
//     "|" escaped as "\|" and line breaks as spaces in every cell;
//   - an array of scalars: a bulleted list;
//   - an empty array: "_(none)_", an empty object "_(empty)_";
//   - any other array (mixed, or objects with nested values), and any
//     object or array nested deeper than depth (the top level is depth 1):
//     a ```json code block of that value, indented;
//   - a scalar: its text (a string unquoted, numbers exactly as in data).
//
// Members keep the order of data. depth must be at least 1.
func RenderMarkdown(data []byte, depth int) (string, error) {
	v, err := decodeOrdered(data)
	if err != nil {
		return "", fmt.Errorf("render markdown: %w", err)
	}
	r := mdRenderer{limit: depth}
	r.value(v, 1, true)
	return strings.TrimRight(r.b.String(), "\n") + "\n", nil
}

// object is a JSON object with its members in order.
type object []member

type member struct {
	key   string
	value any // object, []any, string, json.Number, bool or nil
}

// decodeOrdered decodes one JSON value, keeping the order of object
// members (map[string]any would lose it).
func decodeOrdered(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	v, err := decodeValue(dec)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("trailing data after the JSON value")
	}
	return v, nil
}

func decodeValue(dec *json.Decoder) (any, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			obj := object{}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, err
				}
				v, err := decodeValue(dec)
				if err != nil {
					return nil, err
				}
				obj = append(obj, member{key: kt.(string), value: v})
			}
			_, err := dec.Token()
			return obj, err
		case '[':
			arr := []any{}
			for dec.More() {
				v, err := decodeValue(dec)
				if err != nil {
					return nil, err
				}
				arr = append(arr, v)
			}
			_, err := dec.Token()
			return arr, err
		}
		return nil, fmt.Errorf("unexpected %v", t)
	default:
		return t, nil
	}
}

func isScalar(v any) bool {
	switch v.(type) {
	case object, []any:
		return false
	}
	return true
}

// scalarText is a scalar's text: a string as is, a number as written,
// true, false or null.
func scalarText(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case json.Number:
		return x.String()
	case bool:
		return strconv.FormatBool(x)
	case nil:
		return "null"
	}
	panic(fmt.Sprintf("actions: scalarText of %T", v))
}

type mdRenderer struct {
	b     strings.Builder
	limit int
}

// value renders v, found at depth d. top is true for the whole result.
func (r *mdRenderer) value(v any, d int, top bool) {
	if !isScalar(v) && d > r.limit {
		r.codeBlock(v)
		return
	}
	switch x := v.(type) {
	case object:
		r.object(x, d)
	case []any:
		r.array(x, d)
	default:
		if top {
			r.b.WriteString(scalarText(x))
			r.b.WriteString("\n")
		}
	}
}

func (r *mdRenderer) object(o object, d int) {
	if len(o) == 0 {
		r.b.WriteString("_(empty)_\n")
		return
	}
	for _, m := range o {
		if isScalar(m.value) {
			fmt.Fprintf(&r.b, "- **%s**: %s\n", m.key, scalarText(m.value))
		}
	}
	for _, m := range o {
		if isScalar(m.value) {
			continue
		}
		if s := r.b.String(); s != "" && !strings.HasSuffix(s, "\n\n") {
			r.b.WriteString("\n") // a blank line before the heading
		}
		if level := d + 1; level <= 6 {
			fmt.Fprintf(&r.b, "%s %s\n\n", strings.Repeat("#", level), m.key)
		} else {
			fmt.Fprintf(&r.b, "**%s**\n\n", m.key)
		}
		r.value(m.value, d+1, false)
	}
}

func (r *mdRenderer) array(a []any, d int) {
	switch {
	case len(a) == 0:
		r.b.WriteString("_(none)_\n")
	case allScalars(a):
		for _, v := range a {
			fmt.Fprintf(&r.b, "- %s\n", scalarText(v))
		}
	case uniformObjects(a):
		r.table(a)
	default:
		r.codeBlock(a)
	}
}

func allScalars(a []any) bool {
	for _, v := range a {
		if !isScalar(v) {
			return false
		}
	}
	return true
}

// uniformObjects reports whether a holds objects that all have the same
// keys in the same order and only scalar values.
func uniformObjects(a []any) bool {
	first, ok := a[0].(object)
	if !ok || len(first) == 0 {
		return false
	}
	for _, v := range a {
		o, ok := v.(object)
		if !ok || len(o) != len(first) {
			return false
		}
		for i, m := range o {
			if m.key != first[i].key || !isScalar(m.value) {
				return false
			}
		}
	}
	return true
}

func (r *mdRenderer) table(a []any) {
	head := a[0].(object)
	r.b.WriteString("|")
	for _, m := range head {
		r.b.WriteString(" " + cell(m.key) + " |")
	}
	r.b.WriteString("\n|")
	for range head {
		r.b.WriteString(" --- |")
	}
	r.b.WriteString("\n")
	for _, v := range a {
		r.b.WriteString("|")
		for _, m := range v.(object) {
			r.b.WriteString(" " + cell(scalarText(m.value)) + " |")
		}
		r.b.WriteString("\n")
	}
}

var cellReplacer = strings.NewReplacer("|", `\|`, "\r\n", " ", "\n", " ", "\r", " ")

// cell escapes s for a table cell.
func cell(s string) string { return cellReplacer.Replace(s) }

// codeBlock writes v as indented JSON in a ```json block, fenced by more
// backticks than any run of them inside.
func (r *mdRenderer) codeBlock(v any) {
	var body strings.Builder
	writeJSON(&body, v, "")
	fence := "```"
	for strings.Contains(body.String(), fence) {
		fence += "`"
	}
	r.b.WriteString(fence + "json\n" + body.String() + "\n" + fence + "\n")
}

// writeJSON writes v as JSON indented by two spaces, members in order.
func writeJSON(b *strings.Builder, v any, indent string) {
	inner := indent + "  "
	switch x := v.(type) {
	case object:
		if len(x) == 0 {
			b.WriteString("{}")
			return
		}
		b.WriteString("{\n")
		for i, m := range x {
			key, _ := json.Marshal(m.key)
			b.WriteString(inner)
			b.Write(key)
			b.WriteString(": ")
			writeJSON(b, m.value, inner)
			if i < len(x)-1 {
				b.WriteString(",")
			}
			b.WriteString("\n")
		}
		b.WriteString(indent + "}")
	case []any:
		if len(x) == 0 {
			b.WriteString("[]")
			return
		}
		b.WriteString("[\n")
		for i, e := range x {
			b.WriteString(inner)
			writeJSON(b, e, inner)
			if i < len(x)-1 {
				b.WriteString(",")
			}
			b.WriteString("\n")
		}
		b.WriteString(indent + "]")
	case string:
		s, _ := json.Marshal(x)
		b.Write(s)
	default:
		b.WriteString(scalarText(x))
	}
}
