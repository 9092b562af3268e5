package store

// addTextTools adds create_text_index and phrase_search.
func (p *Plugin) addTextTools() {}
