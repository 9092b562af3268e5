// Package exampleapp is the example action app that the actions plugin
// serves by default: a server status and channels of messages kept in the
// embedded document store (package pkg/docstore), on every transport of
// the action framework (HTTP under /api, the command line, MCP).
//
//   - status (GET /api/status): the app's name, version and uptime; a
//     markdown MCP result;
//   - user:create (PUT /api/user): sign up {name, email, password}; the
//     users live in the store, with bcrypt password hashes;
//   - session:create (PUT /api/session): sign in {email, password}; a web
//     client's session then names the user;
//   - session:destroy (DELETE /api/session): sign out;
//   - message:post (POST /api/messages): posts {channel, text, author},
//     the author being the signed-in user when there is one;
//   - message:list (GET /api/messages?channel=&cursor=&limit=): a
//     channel's messages, oldest first, a page at a time;
//   - status:resource: the status as the MCP resource example://status;
//   - message:resource: a channel's latest messages as the resource
//     template example://messages/{channel};
//   - summarize:channel: the MCP prompt summarize-channel, which asks to
//     summarize a channel's latest messages.
//
// Every channel is open to every client but inboxes: channel
// "inbox:"+identity is received (over WebSocket, as MCP notifications)
// and read (message:list, the resource, the prompt) only by that
// identity, a signed-in web user's "user:<id>" or an authenticated
// caller's principal; anyone may post to it.
//
// user:create and session:create are the app's signup and login actions
// (the markers the OAuth part of the framework uses); both return
// {user: {id, name, email, created_at}}. Passwords are secret inputs:
// redacted in logs and errors, advertised as passwords.
package exampleapp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"golang.org/x/crypto/bcrypt"

	"github.com/mcpkit/mcpkit/pkg/action"
	"github.com/mcpkit/mcpkit/pkg/docstore"
	"github.com/mcpkit/mcpkit/pkg/docstore/kv"
)

// Name, Version and Description describe the app.
const (
	Name        = "example"
	Version     = "0.1.0"
	Description = "The mcpkit example action app: a status, users (sign up, sign in, sign out), and channels of messages (post, list, read as a resource, summarize with a prompt)."
)

// Limits of the app's inputs.
const (
	MaxChannelLen = 64
	MaxTextLen    = 4000
	MaxAuthorLen  = 64
	MaxPageSize   = 100
	// ResourceMessages is how many of a channel's latest messages the
	// resource and the prompt read.
	ResourceMessages = 20
)

// collection holds the messages, indexed on channel.
const collection = "messages"

// App is the example app over its store.
type App struct {
	app        *action.App
	db         *docstore.Store
	ps         action.PubSub // nil: messages are not broadcast
	started    time.Time
	bcryptCost int
	dummyHash  []byte // compared against when signing in as nobody
	principals string // Options.PrincipalPrefix
}

// Options tune the app.
type Options struct {
	// BcryptCost is the cost of password hashes (4 to 31); 0 is
	// bcrypt.DefaultCost (10, about 50 ms a hash). Lower it only in tests.
	BcryptCost int
	// PrincipalPrefix, when set, makes a caller without a signed-in web
	// session whose principal is PrincipalPrefix and a user id that user
	// (the actions plugin's OAuth server names its users so). Leave it
	// empty unless the server's token verifier is the one issuing such
	// principals.
	PrincipalPrefix string
}

// Open opens the app's store at path (a bbolt file, created when absent;
// "" in memory) and returns the app, which broadcasts every posted message
// on its channel through ps (nil: it does not). Close closes the store.
func Open(path string, ps action.PubSub, opts Options) (*App, error) {
	if opts.BcryptCost == 0 {
		opts.BcryptCost = bcrypt.DefaultCost
	}
	dummy, err := bcrypt.GenerateFromPassword([]byte("no user has this password"), opts.BcryptCost)
	if err != nil {
		return nil, fmt.Errorf("example app: bcrypt cost %d: %w", opts.BcryptCost, err)
	}
	db, err := docstore.Open(path, docstore.Options{})
	if err != nil {
		return nil, fmt.Errorf("example app: %w", err)
	}
	for coll, def := range map[string]docstore.IndexDef{
		collection: {Name: "by_channel", Fields: []string{"channel"}},
		users:      {Name: "by_email", Fields: []string{"email"}, Unique: true},
	} {
		if _, err := db.CreateIndex(context.Background(), coll, def, nil); err != nil {
			db.Close()
			return nil, fmt.Errorf("example app: index %s %s: %w", coll, def.Name, err)
		}
	}
	a := &App{app: action.NewApp(Name, Description), db: db, ps: ps, started: time.Now(), bcryptCost: opts.BcryptCost, dummyHash: dummy,
		principals: opts.PrincipalPrefix}
	a.app.SetChannelAuthorizer(a.authorizeChannel)
	for _, act := range append(a.actions(), a.userActions()...) {
		if err := a.app.Add(act); err != nil {
			db.Close()
			return nil, fmt.Errorf("example app: %w", err)
		}
	}
	return a, nil
}

// App returns the action app.
func (a *App) App() *action.App { return a.app }

// Close closes the store; later calls fail with an internal error.
func (a *App) Close() error { return a.db.Close() }

func off() *bool { return new(bool) }

func (a *App) actions() []action.Action {
	return []action.Action{
		{
			Name:        "status",
			Description: "The example app's name, version and uptime.",
			Web:         &action.Web{Method: "GET", Route: "/status"},
			Run:         func(context.Context, *action.Conn, any) (any, error) { return a.status(), nil },
			MCP:         action.MCP{ResponseFormat: action.FormatMarkdown},
		},
		{
			Name:        "status:resource",
			Description: "The example app's status as JSON.",
			Run: func(context.Context, *action.Conn, any) (any, error) {
				data, err := json.Marshal(a.status())
				return Text{Text: string(data), MIMEType: "application/json"}, err
			},
			MCP: action.MCP{Tool: off(), Resource: &action.Resource{URI: "example://status", MIMEType: "application/json"}},
		},
		{
			Name:        "message:post",
			Description: "Post a message to a channel; returns the stored message with its id.",
			Inputs:      (*PostInputs)(nil),
			Web:         &action.Web{Method: "POST", Route: "/messages"},
			Run: func(ctx context.Context, c *action.Conn, in any) (any, error) {
				return a.post(ctx, c, in.(*PostInputs))
			},
		},
		{
			Name:        "message:list",
			Description: "List a channel's messages, oldest first, a page at a time: pass next_cursor back as cursor for the next page.",
			Inputs:      (*ListInputs)(nil),
			Web:         &action.Web{Method: "GET", Route: "/messages"},
			Run: func(ctx context.Context, c *action.Conn, in any) (any, error) {
				return a.list(ctx, c, in.(*ListInputs))
			},
		},
		{
			Name:        "message:resource",
			Description: fmt.Sprintf("A channel's latest %d messages as JSON.", ResourceMessages),
			Inputs:      (*ChannelInputs)(nil),
			Run: func(ctx context.Context, c *action.Conn, in any) (any, error) {
				msgs, err := a.latest(ctx, c, in.(*ChannelInputs).Channel)
				if err != nil {
					return nil, err
				}
				data, err := json.Marshal(msgs)
				return Text{Text: string(data), MIMEType: "application/json"}, err
			},
			MCP: action.MCP{Tool: off(), Resource: &action.Resource{URITemplate: "example://messages/{channel}", MIMEType: "application/json"}},
		},
		{
			Name:        "summarize:channel",
			Description: fmt.Sprintf("Ask for a summary of a channel's latest %d messages.", ResourceMessages),
			Inputs:      (*ChannelInputs)(nil),
			Run: func(ctx context.Context, c *action.Conn, in any) (any, error) {
				return a.summarize(ctx, c, in.(*ChannelInputs).Channel)
			},
			MCP: action.MCP{Tool: off(), Prompt: &action.Prompt{Title: "Summarize a channel"}},
		},
	}
}

// Status is the result of status.
type Status struct {
	Name          string  `json:"name"`
	Version       string  `json:"version"`
	UptimeSeconds float64 `json:"uptime_seconds"`
}

func (a *App) status() Status {
	return Status{Name: Name, Version: Version, UptimeSeconds: time.Since(a.started).Round(time.Millisecond).Seconds()}
}

// Text is a resource action's result: text and its MIME type.
type Text struct {
	Text     string `json:"text"`
	MIMEType string `json:"mimeType"`
}

// Message is a stored message.
type Message struct {
	ID      int64  `json:"id"`
	Channel string `json:"channel"`
	Text    string `json:"text"`
	Author  string `json:"author"`
	// UserID is the signed-in user who posted it; absent when the poster
	// was not signed in.
	UserID    int64  `json:"user_id,omitempty" jsonschema:"the signed-in user who posted it, if any"`
	CreatedAt string `json:"created_at" jsonschema:"when it was posted (RFC 3339, UTC)"`
}

// PostInputs are message:post's inputs.
type PostInputs struct {
	Channel string `json:"channel" jsonschema:"the channel to post to"`
	Text    string `json:"text" jsonschema:"the message"`
	Author  string `json:"author,omitempty" jsonschema:"who posts it: required unless signed in; when signed in, the user's name or omitted"`
}

// AdjustSchema implements action.SchemaAdjuster: every field is non-empty
// and bounded.
func (*PostInputs) AdjustSchema(s *jsonschema.Schema) error {
	bound(s, "channel", MaxChannelLen)
	bound(s, "text", MaxTextLen)
	bound(s, "author", MaxAuthorLen)
	return nil
}

// ChannelInputs name a channel.
type ChannelInputs struct {
	Channel string `json:"channel" jsonschema:"the channel"`
}

// AdjustSchema implements action.SchemaAdjuster.
func (*ChannelInputs) AdjustSchema(s *jsonschema.Schema) error {
	bound(s, "channel", MaxChannelLen)
	return nil
}

// ListInputs are message:list's inputs.
type ListInputs struct {
	Channel string `json:"channel" jsonschema:"the channel"`
	Cursor  string `json:"cursor,omitempty" jsonschema:"next_cursor of the previous page; omit for the first"`
	Limit   int    `json:"limit,omitempty" jsonschema:"messages per page (default 20)"`
}

// AdjustSchema implements action.SchemaAdjuster.
func (*ListInputs) AdjustSchema(s *jsonschema.Schema) error {
	bound(s, "channel", MaxChannelLen)
	one, most := 1.0, float64(MaxPageSize)
	s.Properties["limit"].Minimum, s.Properties["limit"].Maximum = &one, &most
	return nil
}

// bound makes the string property name of s non-empty and at most max
// characters long.
func bound(s *jsonschema.Schema, name string, max int) {
	one := 1
	s.Properties[name].MinLength, s.Properties[name].MaxLength = &one, &max
}

// Page is message:list's result.
type Page struct {
	Messages   []Message `json:"messages"`
	NextCursor string    `json:"next_cursor,omitempty" jsonschema:"pass as cursor for the next page; absent after the last"`
}

func (a *App) post(ctx context.Context, c *action.Conn, in *PostInputs) (Message, error) {
	u, signedIn, err := a.signedIn(ctx, c)
	if err != nil {
		return Message{}, err
	}
	author, sender := in.Author, c.ID
	switch {
	case signedIn && author != "" && author != u.Name:
		return Message{}, &action.Error{Kind: action.KindInvalidParam, Field: "author", Message: fmt.Sprintf("signed in as %q: omit author or give that name", u.Name)}
	case signedIn:
		author, sender = u.Name, fmt.Sprintf("user:%d", u.ID) // its Identity
	case author == "":
		return Message{}, &action.Error{Kind: action.KindMissingParam, Field: "author", Message: "required when not signed in"}
	}
	now := time.Now().UTC().Format(time.RFC3339Nano)
	fields := []docstore.Field{
		{Key: "channel", Value: docstore.Text(in.Channel)},
		{Key: "text", Value: docstore.Text(in.Text)},
		{Key: "author", Value: docstore.Text(author)},
		{Key: "created_at", Value: docstore.Text(now)},
	}
	if signedIn {
		fields = append(fields, docstore.Field{Key: "user_id", Value: docstore.Int(u.ID)})
	}
	doc, err := a.db.Insert(ctx, collection, docstore.Map(fields...))
	if err != nil {
		return Message{}, storeError("store the message", err)
	}
	msg := toMessage(doc)
	if a.ps != nil {
		// The message is stored: a failed broadcast does not fail the post.
		if err := a.ps.Publish(ctx, in.Channel, action.Message{Channel: in.Channel, Message: msg, Sender: sender}); err != nil {
			a.app.Logger().Warn("broadcast a posted message", "channel", in.Channel, "err", err)
		}
	}
	return msg, nil
}

func (a *App) list(ctx context.Context, c *action.Conn, in *ListInputs) (Page, error) {
	if err := a.authorizeChannel(ctx, c, in.Channel); err != nil {
		return Page{}, err
	}
	limit := in.Limit
	if limit == 0 {
		limit = ResourceMessages
	}
	page, err := a.db.Page(ctx, collection, docstore.Query{Filter: channelFilter(in.Channel), Limit: limit, Cursor: in.Cursor})
	if err != nil {
		if docstore.ErrorCode(err) == docstore.CodeInvalid && in.Cursor != "" {
			return Page{}, &action.Error{Kind: action.KindInvalidParam, Field: "cursor", Message: "not a cursor of this list", Err: err}
		}
		return Page{}, storeError("list messages", err)
	}
	out := Page{Messages: make([]Message, 0, len(page.Docs)), NextCursor: page.Next}
	for _, d := range page.Docs {
		out.Messages = append(out.Messages, toMessage(d))
	}
	return out, nil
}

// latest returns a channel's latest ResourceMessages messages, oldest
// first, if c may read the channel; not_found when the channel has none.
func (a *App) latest(ctx context.Context, c *action.Conn, channel string) ([]Message, error) {
	if err := a.authorizeChannel(ctx, c, channel); err != nil {
		return nil, err
	}
	page, err := a.db.Page(ctx, collection, docstore.Query{Filter: channelFilter(channel), Desc: true, Limit: ResourceMessages})
	if err != nil {
		return nil, storeError("read messages", err)
	}
	if len(page.Docs) == 0 {
		return nil, action.Errorf(action.KindNotFound, "channel %q has no messages", channel)
	}
	out := make([]Message, len(page.Docs))
	for i, d := range page.Docs {
		out[len(out)-1-i] = toMessage(d)
	}
	return out, nil
}

// PromptResult is an MCP prompt action's result.
type PromptResult struct {
	Description string          `json:"description,omitempty"`
	Messages    []PromptMessage `json:"messages"`
}

// PromptMessage is one message of a prompt: a role and text content.
type PromptMessage struct {
	Role    string      `json:"role"`
	Content TextContent `json:"content"`
}

// TextContent is text content of a prompt message.
type TextContent struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

func (a *App) summarize(ctx context.Context, c *action.Conn, channel string) (PromptResult, error) {
	msgs, err := a.latest(ctx, c, channel)
	if err != nil {
		return PromptResult{}, err
	}
	text := fmt.Sprintf("Summarize the latest messages of channel %q in a few sentences: who said what, and any open question.\n", channel)
	for _, m := range msgs {
		text += fmt.Sprintf("\n[%s] %s: %s", m.CreatedAt, m.Author, m.Text)
	}
	return PromptResult{
		Description: fmt.Sprintf("Summarize channel %q", channel),
		Messages:    []PromptMessage{{Role: "user", Content: TextContent{Type: "text", Text: text}}},
	}, nil
}

func channelFilter(channel string) *docstore.Filter {
	f, err := docstore.ParseFilter(docstore.Map(docstore.Field{Key: "channel", Value: docstore.Text(channel)}))
	if err != nil {
		panic(fmt.Sprintf("exampleapp: an equality filter is refused: %v", err)) // cannot happen: a text equality is valid
	}
	return f
}

// toMessage reads a stored message.
func toMessage(d docstore.Doc) Message {
	id, _ := d.ID.Int()
	v, _ := d.Value.Get("user_id")
	user, _ := v.Int()
	return Message{ID: id, Channel: text(d, "channel"), Text: text(d, "text"), Author: text(d, "author"), UserID: user, CreatedAt: text(d, "created_at")}
}

// storeError is err, from the app's store while doing what, as the
// caller should see it: the store's PostgreSQL server unreachable is
// unavailable (HTTP 503: retry later) and a write that lost to a
// concurrent one is a conflict (nothing was written: retry), neither
// showing the cause; anything else is internal.
func storeError(what string, err error) error {
	switch {
	case errors.Is(err, kv.ErrUnavailable):
		return &action.Error{Kind: action.KindUnavailable, Message: what + ": the data store is unavailable; retry later", Err: err}
	case errors.Is(err, kv.ErrConflict):
		return &action.Error{Kind: action.KindConflict, Message: what + ": a concurrent write conflicted and nothing was written; retry", Err: err}
	}
	return fmt.Errorf("%s: %w", what, err)
}
