package respengine

import (
	"strings"

	"github.com/mcpkit/mcpkit/pkg/resp"
)

// CompactCommand is what an agent needs to write a command, in plain JSON:
// its COMMAND DOCS summary, group and since, its usage line built from the
// DOCS argument tree, and its COMMAND INFO arity and flags. It is the
// default form of the commands tool: a registry entry's lossless RESP form
// ([CommandEntry]) spends most of its bytes on {type, encoding, value}
// wrappers, key specifications and history an agent rarely reads.
type CompactCommand struct {
	Name    string `json:"name"`
	Summary string `json:"summary,omitempty"`
	// Syntax is the usage line: the command's name (a subcommand's as
	// "CONFIG GET"), then its arguments by name, tokens in capitals,
	// [optional], <one | of> and "..." for repetition, as Redis's own
	// documentation writes it. Empty when the server has no DOCS for it.
	Syntax string `json:"syntax,omitempty"`
	// Arity is COMMAND INFO's: n means exactly n words (the name
	// included), -n at least n.
	Arity int64    `json:"arity"`
	Flags []string `json:"flags"`
	Group string   `json:"group,omitempty"`
	Since string   `json:"since,omitempty"`
	// ReplacedBy is set for a deprecated command: what to use instead.
	ReplacedBy string `json:"replaced_by,omitempty"`
}

// CompactCommandsReply is a page of the registry in the compact form: a
// [CommandsReply] whose commands are [CompactCommand]s.
type CompactCommandsReply struct {
	Target     string           `json:"target"`
	Count      int64            `json:"count"`
	Matching   int              `json:"matching"`
	Commands   []CompactCommand `json:"commands"`
	NextCursor *string          `json:"next_cursor"`
}

// Compact returns r in the compact form.
func (r CommandsReply) Compact() CompactCommandsReply {
	out := CompactCommandsReply{Target: r.Target, Count: r.Count, Matching: r.Matching, Commands: make([]CompactCommand, len(r.Commands)), NextCursor: r.NextCursor}
	for i, e := range r.Commands {
		out.Commands[i] = e.Compact()
	}
	return out
}

// Compact returns e's compact form.
func (e CommandEntry) Compact() CompactCommand {
	out := CompactCommand{Name: e.Name, Flags: []string{}}
	// COMMAND INFO: name, arity, flags, first key, last key, step, ...
	if len(e.Info.Elems) > 2 {
		out.Arity = e.Info.Elems[1].Int
		for _, f := range e.Info.Elems[2].Elems {
			out.Flags = append(out.Flags, string(f.Str))
		}
	}
	docs := fields(e.Docs)
	out.Summary = string(docs["summary"].Str)
	out.Group = string(docs["group"].Str)
	out.Since = string(docs["since"].Str)
	out.ReplacedBy = string(docs["replaced_by"].Str)
	if e.Docs.Kind == resp.KindMap || len(e.Docs.Elems) > 0 {
		words := []string{strings.ToUpper(strings.ReplaceAll(e.Name, "|", " "))}
		for _, a := range docs["arguments"].Elems {
			words = append(words, argSyntax(a))
		}
		out.Syntax = strings.Join(words, " ")
	}
	return out
}

// fields maps a DOCS map's keys (a RESP3 map or a RESP2 flat array of
// key, value) to their values; the first of duplicate keys wins.
func fields(v resp.Value) map[string]resp.Value {
	out := make(map[string]resp.Value, len(v.Elems)/2)
	for i := 0; i+1 < len(v.Elems); i += 2 {
		k := string(v.Elems[i].Str)
		if _, dup := out[k]; !dup {
			out[k] = v.Elems[i+1]
		}
	}
	return out
}

// argSyntax writes one DOCS argument the way Redis's documentation does:
// "TOKEN name", a pure token alone, a oneof as "a | b" and a block as
// "a b", "x [x ...]" when multiple, in [] when optional and in <> when a
// oneof is required or needs grouping (under a token, repeated).
func argSyntax(a resp.Value) string {
	f := fields(a)
	flags := map[string]bool{}
	for _, v := range f["flags"].Elems {
		flags[string(v.Str)] = true
	}
	typ, token := string(f["type"].Str), string(f["token"].Str)
	var body string
	switch typ {
	case "pure-token":
		body, token = token, ""
	case "oneof", "block":
		parts := make([]string, 0, len(f["arguments"].Elems))
		for _, c := range f["arguments"].Elems {
			parts = append(parts, argSyntax(c))
		}
		if typ == "block" {
			body = strings.Join(parts, " ")
			break
		}
		body = strings.Join(parts, " | ")
		if token != "" || flags["multiple"] || !flags["optional"] {
			body = "<" + body + ">"
		}
	default:
		body = string(f["display_text"].Str)
		if body == "" {
			body = string(f["name"].Str)
		}
	}
	one := body
	if token != "" {
		one = token + " " + body
	}
	switch {
	case flags["multiple"] && flags["multiple_token"]:
		one += " [" + one + " ...]"
	case flags["multiple"]:
		one += " [" + body + " ...]"
	}
	if flags["optional"] {
		return "[" + one + "]"
	}
	return one
}
