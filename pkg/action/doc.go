// Package action is the action framework: an action is a Go value with a
// name, a description, typed inputs (a Go struct whose JSON Schema is
// derived), a run function, middleware, a timeout and options for each
// transport. Every transport runs an action through one path,
// [App.Run]: parse and validate the params, Before middlewares, Run under
// the timeout, After middlewares, with errors typed as [*Error] whose
// [Kind] each transport maps to its status.
//
// The package serves actions over HTTP ([App.HTTPHandler], with an
// OpenAPI document), WebSocket ([App.WebSocketHandler]: Keryx's message
// protocol, with channel subscriptions fed by a [PubSub]) and the command
// line ([App.RunCLI]); HTTP requests can be rate-limited per client
// ([RateLimit], counted in a [RateStore]). Web clients have sessions
// ([Sessions]: a cookie naming data in a [SessionStore], shared by the
// HTTP and WebSocket transports), which actions use through
// [Conn.Session]. Background tasks: [Tasks]
// enqueues actions that declare a [Task] on a [TaskQueue] ([LocalQueue] in
// process) and runs them with workers through App.Run on a "task" Conn.
// It has no MCP code: plugins/actions maps an App onto MCP tools,
// resources and prompts.
package action
