// Package oauth is an OAuth 2.1 authorization server for the clients of
// an action app's protected resource (its MCP endpoint), after Keryx's:
// RFC 8414 server metadata, RFC 9728 protected-resource
// metadata, RFC 7591 dynamic client registration, the authorization code
// grant with PKCE (S256 only), refresh tokens with rotation and reuse
// detection, RFC 7009 revocation, the RFC 9207 iss response parameter and
// RFC 8707 resource indicators. Users sign in or sign up on an authorize
// page whose forms are generated from the inputs of the app's actions
// marked login and signup (action.MCP.LoginAction, SignupAction), and the
// submitted form runs that action through [action.App.Run]: the user id
// it returns ({"user": {"id": ...}}) is the grant's user.
//
// Clients, codes and tokens live in a [Store] (in process, or shared
// through Redis by package pkg/action/redisstate so that every instance
// verifies every token); codes and tokens are kept under the SHA-256 of
// their value, never the value itself. The package holds no MCP code: a
// resource server calls [Server.Verify] with a bearer token and the
// resource it serves; a token found valid is trusted for
// Options.VerifyCache (1 s) before the store is read again. Revocations
// stay coherent across instances: with a store that carries them
// ([Revocations]: Redis) and [Server.WatchRevocations] running on each
// instance, a revocation is answered only once every instance has
// dropped the token (or after VerifyCache, when one does not answer), so
// no instance accepts it afterwards; an instance not listening caches
// nothing.
//
// Hardening: redirect URIs without fragment or userinfo, and https, or
// http on a loopback host (localhost, 127.0.0.0/8, [::1]), or a native
// app's reverse-domain private-use scheme (RFC 8252 7.1:
// com.example.app:/cb); every other scheme (ftp:, ws:, javascript:, ...)
// refused with invalid_redirect_uri; compared exactly at every step; a
// code exchanged twice revokes the tokens of its first exchange; errors
// found before the redirect URI is known good are rendered as a page and
// never redirected; registrations rate-limited per IP; failed sign-ins on
// the page counted with the app's other ones (it runs the login action
// through App.Run, where [action.SignInLimit] applies); a CSRF token on
// the form post (double-submit cookie); secrets compared in constant time;
// the pages sent with a strict Content-Security-Policy including
// frame-ancestors 'none'.
package oauth
