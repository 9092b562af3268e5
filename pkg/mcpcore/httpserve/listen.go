package httpserve

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"
)

// shutdownTimeout bounds the graceful part of ListenAndServe's shutdown.
const shutdownTimeout = 5 * time.Second

// ErrUnauthenticatedListen is returned by [CheckListenAddr] and
// [ListenAndServe] for a non-loopback address without authentication.
var ErrUnauthenticatedListen = errors.New("non-loopback listen address needs authentication")

// CheckListenAddr refuses a listen address whose host is not loopback
// (127.0.0.0/8, ::1, "localhost") unless authentication is configured. An
// empty host, 0.0.0.0 and :: listen on every interface and count as
// non-loopback.
func CheckListenAddr(addr string, authConfigured bool) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("invalid listen address %q: %w", addr, err)
	}
	if isLoopbackHost(host) || authConfigured {
		return nil
	}
	return fmt.Errorf("refusing to listen on %q: %w: the MCP endpoint gives unrestricted access to the plugins' backends; "+
		"configure bearer tokens (config `http.bearer_tokens_file` or `http.bearer_tokens_env`) or a plugin's token verifier, or listen on 127.0.0.1",
		addr, ErrUnauthenticatedListen)
}

// ServeOptions configures [ListenAndServe].
type ServeOptions struct {
	// Logger receives server errors; nil discards them.
	Logger *slog.Logger
	// Ready, if set, is called with the bound address (so ":0" works).
	Ready func(net.Addr)
	// TLS, if set, serves HTTPS with it (it must hold a certificate).
	TLS *tls.Config
}

// ListenAndServe listens on addr and serves h until ctx is done. It refuses
// (with [ErrUnauthenticatedListen]) an address beyond loopback unless h
// requires authentication: a [*Handler] with bearer tokens or a verifier
// (any handler whose Authenticated method reports true); any other handler
// counts as unauthenticated. It then
// shuts down gracefully, waiting at most 5 s for requests in flight before
// closing the remaining connections. If h has a Close method (a [*Handler]
// does), it is called at shutdown so hanging session streams end; a caller
// that wraps the Handler in its own mux must call [Handler.Close] itself. It
// returns nil after a shutdown caused by ctx, or the listen or serve error.
func ListenAndServe(ctx context.Context, addr string, h http.Handler, opts ServeOptions) error {
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	authenticated := false
	if a, ok := h.(interface{ Authenticated() bool }); ok {
		authenticated = a.Authenticated()
	}
	if err := CheckListenAddr(addr, authenticated); err != nil {
		return err
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		return fmt.Errorf("listen %s: %w", addr, err)
	}
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
		// No ReadTimeout or WriteTimeout: SSE responses are long-lived.
		// A *Handler bounds each request body by its BodyTimeout instead,
		// and the session idle timeout bounds sessions.
	}
	if opts.Ready != nil {
		opts.Ready(ln.Addr())
	}

	serve := func() error { return srv.Serve(ln) }
	if opts.TLS != nil {
		srv.TLSConfig = opts.TLS.Clone()
		if srv.TLSConfig.MinVersion == 0 {
			srv.TLSConfig.MinVersion = tls.VersionTLS12
		}
		serve = func() error { return srv.ServeTLS(ln, "", "") } // certificates come from TLSConfig
	}
	errc := make(chan error, 1)
	go func() { errc <- serve() }()
	select {
	case err := <-errc:
		return fmt.Errorf("serve %s: %w", ln.Addr(), err)
	case <-ctx.Done():
	}

	sctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	// Closing the sessions ends their hanging GET streams, which Shutdown
	// would otherwise wait for. A session's Close waits for its tool calls,
	// so it runs beside Shutdown under the same bound.
	closed := make(chan struct{})
	go func() {
		defer close(closed)
		if c, ok := h.(interface{ Close() }); ok {
			c.Close()
		}
	}()
	if err := srv.Shutdown(sctx); err != nil {
		logger.Warn("HTTP shutdown timed out; closing connections", "error", err)
		srv.Close()
	}
	select {
	case <-closed:
	case <-sctx.Done():
		logger.Warn("closing MCP sessions timed out")
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve %s: %w", ln.Addr(), err)
	}
	return nil
}
