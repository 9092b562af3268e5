package exampleapp

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"golang.org/x/crypto/bcrypt"

	"github.com/mcpkit/mcpkit/pkg/action"
	"github.com/mcpkit/mcpkit/pkg/docstore"
)

// Limits of the users' inputs. A password is at most 72 bytes: bcrypt
// reads no more, and a longer one is refused rather than cut.
const (
	MinPasswordLen = 8
	MaxPasswordLen = 72
	MaxNameLen     = 64
	MaxEmailLen    = 254
)

// users holds the users, unique on email.
const users = "users"

// sessionUser is the session key of the signed-in user's id.
const sessionUser = "user_id"

// User is a user as the actions show it: never the password or its hash.
type User struct {
	ID        int64  `json:"id"`
	Name      string `json:"name"`
	Email     string `json:"email"`
	CreatedAt string `json:"created_at" jsonschema:"when the user signed up (RFC 3339, UTC)"`
}

// SignedIn is the result of user:create and session:create: {user:{id,
// ...}}, the shape an OAuth login or signup action returns.
type SignedIn struct {
	User User `json:"user"`
}

// SignUpInputs are user:create's inputs.
type SignUpInputs struct {
	Name     string `json:"name" jsonschema:"your name, as others see it"`
	Email    string `json:"email" jsonschema:"email address (you sign in with it)"`
	Password string `json:"password" action:"secret" jsonschema:"password (8 to 72 bytes)"`
}

// AdjustSchema implements action.SchemaAdjuster.
func (*SignUpInputs) AdjustSchema(s *jsonschema.Schema) error {
	bound(s, "name", MaxNameLen)
	boundEmail(s)
	boundPassword(s)
	return nil
}

// SignInInputs are session:create's inputs.
type SignInInputs struct {
	Email    string `json:"email" jsonschema:"email address"`
	Password string `json:"password" action:"secret" jsonschema:"password"`
}

// AdjustSchema implements action.SchemaAdjuster.
func (*SignInInputs) AdjustSchema(s *jsonschema.Schema) error {
	boundEmail(s)
	boundPassword(s)
	return nil
}

func boundEmail(s *jsonschema.Schema) {
	bound(s, "email", MaxEmailLen)
	s.Properties["email"].Pattern = `^[^@\s]+@[^@\s]+$`
	s.Properties["email"].Format = "email"
}

func boundPassword(s *jsonschema.Schema) {
	bound(s, "password", MaxPasswordLen)
	least := MinPasswordLen
	s.Properties["password"].MinLength = &least
}

func (a *App) userActions() []action.Action {
	return []action.Action{
		{
			Name:        "user:create",
			Description: "Sign up: create a user with a name, an email address and a password, and sign in as it (web clients get a session).",
			Inputs:      (*SignUpInputs)(nil),
			Web:         &action.Web{Method: "PUT", Route: "/user"},
			Run: func(ctx context.Context, c *action.Conn, in any) (any, error) {
				return a.signUp(ctx, c, in.(*SignUpInputs))
			},
			MCP: action.MCP{SignupAction: true},
		},
		{
			Name:        "session:create",
			Description: "Sign in with an email address and a password (web clients get a session).",
			Inputs:      (*SignInInputs)(nil),
			Web:         &action.Web{Method: "PUT", Route: "/session"},
			Run: func(ctx context.Context, c *action.Conn, in any) (any, error) {
				return a.signIn(ctx, c, in.(*SignInInputs))
			},
			MCP: action.MCP{LoginAction: true},
		},
		{
			Name:        "session:destroy",
			Description: "Sign out: end the web session.",
			Web:         &action.Web{Method: "DELETE", Route: "/session"},
			Run: func(ctx context.Context, c *action.Conn, _ any) (any, error) {
				if c.Session == nil {
					return nil, action.Errorf(action.KindNotFound, "this %s connection has no session: sign-out is for web clients", c.Type)
				}
				return struct {
					SignedOut bool `json:"signed_out"`
				}{true}, c.Session.Destroy(ctx)
			},
		},
	}
}

// checkPassword refuses a password bcrypt would cut: the schema bounds
// characters, bcrypt counts bytes.
func checkPassword(p string) error {
	if len(p) > MaxPasswordLen {
		return &action.Error{Kind: action.KindInvalidParam, Field: "password", Message: fmt.Sprintf("at most %d bytes", MaxPasswordLen)}
	}
	return nil
}

func (a *App) signUp(ctx context.Context, c *action.Conn, in *SignUpInputs) (SignedIn, error) {
	if err := checkPassword(in.Password); err != nil {
		return SignedIn{}, err
	}
	hash, err := bcrypt.GenerateFromPassword([]byte(in.Password), a.bcryptCost)
	if err != nil {
		return SignedIn{}, fmt.Errorf("hash the password: %w", err)
	}
	doc, err := a.db.Insert(ctx, users, docstore.Map(
		docstore.Field{Key: "name", Value: docstore.Text(in.Name)},
		docstore.Field{Key: "email", Value: docstore.Text(strings.ToLower(in.Email))},
		docstore.Field{Key: "password_hash", Value: docstore.Text(string(hash))},
		docstore.Field{Key: "created_at", Value: docstore.Text(time.Now().UTC().Format(time.RFC3339Nano))},
	))
	if docstore.ErrorCode(err) == docstore.CodeUniqueViolation {
		return SignedIn{}, &action.Error{Kind: action.KindConflict, Field: "email", Message: "a user with this email address exists"}
	}
	if err != nil {
		return SignedIn{}, storeError("store the user", err)
	}
	u := toUser(doc)
	return SignedIn{u}, a.startSession(ctx, c, u)
}

// errBadCredentials is the one answer to an unknown email address and a
// wrong password, so that sign-in does not tell which users exist.
var errBadCredentials = &action.Error{Kind: action.KindUnauthorized, Message: "wrong email address or password"}

func (a *App) signIn(ctx context.Context, c *action.Conn, in *SignInInputs) (SignedIn, error) {
	if err := checkPassword(in.Password); err != nil {
		return SignedIn{}, err
	}
	doc, found, err := a.userByEmail(ctx, in.Email)
	if err != nil {
		return SignedIn{}, err
	}
	hash := a.dummyHash // an unknown user costs a comparison too
	if found {
		v, _ := doc.Value.Get("password_hash")
		h, _ := v.Text()
		hash = []byte(h)
	}
	err = bcrypt.CompareHashAndPassword(hash, []byte(in.Password))
	if !found || errors.Is(err, bcrypt.ErrMismatchedHashAndPassword) {
		return SignedIn{}, errBadCredentials
	}
	if err != nil {
		return SignedIn{}, fmt.Errorf("check the password: %w", err)
	}
	u := toUser(doc)
	return SignedIn{u}, a.startSession(ctx, c, u)
}

// startSession signs the web client of c in as u: its session, if any,
// is destroyed (a new id, so that an id planted before sign-in is
// useless) and then names u, as its principal "user:<id>" (which the
// HTTP transport gives every request of the session, and rate-limits as
// authenticated) and by id.
func (a *App) startSession(ctx context.Context, c *action.Conn, u User) error {
	if c.Session == nil {
		return nil
	}
	if err := c.Session.SignIn(ctx, fmt.Sprintf("user:%d", u.ID)); err != nil {
		return err
	}
	return c.Session.Set(ctx, sessionUser, u.ID)
}

func (a *App) userByEmail(ctx context.Context, email string) (docstore.Doc, bool, error) {
	f, err := docstore.ParseFilter(docstore.Map(docstore.Field{Key: "email", Value: docstore.Text(strings.ToLower(email))}))
	if err != nil {
		return docstore.Doc{}, false, fmt.Errorf("user filter: %w", err)
	}
	page, err := a.db.Page(ctx, users, docstore.Query{Filter: f, Limit: 1})
	if err != nil {
		return docstore.Doc{}, false, storeError("find the user", err)
	}
	if len(page.Docs) == 0 {
		return docstore.Doc{}, false, nil
	}
	return page.Docs[0], true, nil
}

// signedIn returns the user c's session names, else the user c's
// principal names (Options.PrincipalPrefix), if any. A session or
// principal naming a user that no longer exists is no user.
func (a *App) signedIn(ctx context.Context, c *action.Conn) (User, bool, error) {
	var id int64
	ok := false
	if c.Session != nil {
		var err error
		if ok, err = c.Session.Get(sessionUser, &id); err != nil {
			return User{}, false, err
		}
	}
	if rest, isUser := strings.CutPrefix(c.Principal, a.principals); !ok && a.principals != "" && isUser {
		n, err := strconv.ParseInt(rest, 10, 64)
		id, ok = n, err == nil
	}
	if !ok {
		return User{}, false, nil
	}
	doc, err := a.db.Get(ctx, users, docstore.Int(id))
	if docstore.ErrorCode(err) == docstore.CodeNotFound {
		return User{}, false, nil
	}
	if err != nil {
		return User{}, false, storeError("read the signed-in user", err)
	}
	return toUser(doc), true, nil
}

// InboxPrefix starts a channel that only one identity receives (see
// the package doc).
const InboxPrefix = "inbox:"

// identity is who c's client is: "user:<id>" for a signed-in web user,
// else its authenticated principal, else "".
func (a *App) identity(ctx context.Context, c *action.Conn) (string, error) {
	u, ok, err := a.signedIn(ctx, c)
	if err != nil || ok {
		return fmt.Sprintf("user:%d", u.ID), err
	}
	return c.Principal, nil
}

// authorizeChannel is the app's channel authorizer: an inbox is its
// identity's only.
func (a *App) authorizeChannel(ctx context.Context, c *action.Conn, channel string) error {
	owner, ok := strings.CutPrefix(channel, InboxPrefix)
	if !ok {
		return nil
	}
	id, err := a.identity(ctx, c)
	if err != nil {
		return err
	}
	if id == "" || id != owner {
		return action.Errorf(action.KindForbidden, "channel %q is the inbox of %q, and you are not", channel, owner)
	}
	return nil
}

func toUser(d docstore.Doc) User {
	id, _ := d.ID.Int()
	return User{ID: id, Name: text(d, "name"), Email: text(d, "email"), CreatedAt: text(d, "created_at")}
}

// text is d's text field key ("" when it has none).
func text(d docstore.Doc, key string) string {
	v, _ := d.Value.Get(key)
	s, _ := v.Text()
	return s
}
