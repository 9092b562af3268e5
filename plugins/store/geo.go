package store

// addGeoTools adds create_geo_index and geo.
func (p *Plugin) addGeoTools() {}
