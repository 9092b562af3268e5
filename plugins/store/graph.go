package store

// addGraphTools adds link, unlink, neighbors, in_neighbors, traverse and
// join.
func (p *Plugin) addGraphTools() {}
