package respengine

// Scope is who a session or a live handle belongs to: a principal and,
// within it, the client session that opened it ("" when it belongs to the
// principal as a whole). A call finds only what its own scope opened, and
// a handle of another scope is reported as unknown, never as someone
// else's.
type Scope struct {
	Principal string
	Owner     string
}
