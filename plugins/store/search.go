package store

// addSearchTools adds search (hybrid: filter, vector and text sources).
func (p *Plugin) addSearchTools() {}
