package wire

// DefaultLogMeta is the params._meta key marking a log notification sent
// to a legacy session whether or not its client set a log level
// (mcpcore's Session.LogByDefault): a transport that filters log
// messages by the client's level (a shared HTTP session's record) lets
// such a message through when the client has set no level.
const DefaultLogMeta = "io.mcpkit/default-level"
