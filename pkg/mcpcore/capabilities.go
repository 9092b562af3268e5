package mcpcore

import (
	"context"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The optional server capabilities a plugin may serve: argument
// completion for its prompts and resource templates, and subscriptions to
// its resources. The server declares each only when some plugin serves it,
// and routes each request to the plugin that owns the prompt or resource.

// Completer answers completion/complete for the plugin's prompts and
// resource templates: req.Params.Ref names one of them (a prompt by its
// served name, a template by its URI template), and the argument to
// complete is req.Params.Argument.
type Completer func(ctx context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error)

// Subscriber accepts or refuses a client's resources/subscribe (subscribe
// true) or resources/unsubscribe (false) for one of the plugin's
// resources, or a resource one of its templates matches. Once it has
// accepted, the plugin announces changes with [Host.ResourceUpdated]; the
// SDK keeps the subscriptions and forgets them with their session.
type Subscriber func(ctx context.Context, uri string, subscribe bool) error

// SetCompleter makes the server declare the completions capability and
// send the completion requests for this plugin's prompts and resource
// templates to fn. A completion request for a prompt or template of a
// plugin without a completer gets no values. Call it from Attach.
func (h *Host) SetCompleter(fn Completer) { h.completer = fn }

// SetSubscriber makes the server declare resource subscriptions and send
// the subscribe and unsubscribe requests for this plugin's resources to
// fn. Resources of plugins without a subscriber refuse subscriptions. Call
// it from Attach.
func (h *Host) SetSubscriber(fn Subscriber) { h.subscriber = fn }

// ResourceUpdated notifies the sessions subscribed to uri that it changed
// (notifications/resources/updated). It is safe to call from any goroutine
// once the server is serving.
func (h *Host) ResourceUpdated(ctx context.Context, uri string) error {
	return h.srv.mcp.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: uri})
}

// serves reports whether some plugin satisfies has.
func (s *Server) serves(has func(*Host) bool) bool {
	for _, h := range s.hosts {
		if has(h) {
			return true
		}
	}
	return false
}

// host returns the plugin named name.
func (s *Server) host(name string) *Host {
	for _, h := range s.hosts {
		if h.name == name {
			return h
		}
	}
	return nil
}

// complete routes completion/complete to the completer of the plugin that
// owns the reference.
func (s *Server) complete(ctx context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
	ref := req.Params.Ref
	s.regMu.RLock()
	defer s.regMu.RUnlock()
	var owner string
	switch ref.Type {
	case "ref/prompt":
		owner = s.prompts[ref.Name]
		if owner == "" {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("completion: no prompt named %q", ref.Name)}
		}
	case "ref/resource":
		owner = s.uris[ref.URI]
		if owner == "" {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("completion: no resource or resource template %q", ref.URI)}
		}
	default:
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("completion: ref type %q is neither ref/prompt nor ref/resource", ref.Type)}
	}
	if h := s.host(owner); h != nil && h.completer != nil {
		return h.completer(ctx, req)
	}
	return &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{Values: []string{}}}, nil
}

func (s *Server) subscribe(ctx context.Context, req *mcp.SubscribeRequest) error {
	return s.routeSubscription(ctx, req.Params.URI, true)
}

func (s *Server) unsubscribe(ctx context.Context, req *mcp.UnsubscribeRequest) error {
	return s.routeSubscription(ctx, req.Params.URI, false)
}

// routeSubscription sends a subscription change to the subscriber of the
// plugin serving uri (a resource, or a match of one of its templates).
func (s *Server) routeSubscription(ctx context.Context, uri string, subscribe bool) error {
	h := s.resourceOwner(uri)
	switch {
	case h == nil:
		return mcp.ResourceNotFoundError(uri)
	case h.subscriber == nil:
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("resource %q does not support subscriptions", uri)}
	}
	return h.subscriber(ctx, uri, subscribe)
}

// resourceOwner returns the plugin serving uri, or nil.
func (s *Server) resourceOwner(uri string) *Host {
	s.regMu.RLock()
	defer s.regMu.RUnlock()
	if owner, ok := s.uris[uri]; ok {
		return s.host(owner)
	}
	for _, h := range s.hosts {
		for _, t := range h.templates {
			if t.Regexp().MatchString(uri) {
				return h
			}
		}
	}
	return nil
}
