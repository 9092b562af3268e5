// Package store is mcpkit's document store plugin: the MCP tools of the
// embedded document store engine (package pkg/docstore), over a bbolt
// file or memory. A tool's name is corvid-mcp's, behind the plugin's prefix
// ("store_get"; `mcpkit store` serves them without one: "get"):
//
//   - documents (documents.go): store, insert_auto, get, patch,
//     compare_and_set, delete;
//   - queries (query.go): page, count, delete_where;
//   - collections, indexes and schemas (collections.go): list_collections,
//     create_index (a secondary index, or with type "vector" the
//     collection's vector field), create_scalar_index,
//     create_compound_index, set_schema, get_schema;
//   - files (files.go): backup, dump, load;
//   - text (text.go): create_text_index, phrase_search;
//   - search (search.go): search (filter, vector and text sources fused);
//   - geo (geo.go): create_geo_index, geo;
//   - graph (graph.go, join.go): link, unlink, neighbors, in_neighbors,
//     traverse, join;
//   - batches (write.go): write, the single writes' operations in one
//     transaction;
//   - <prefix>_result: the core's paging of large results.
//
// Documents, ids, values and filters cross the wire in the engine's JSON
// form (docstore.FromJSON and ToJSON: ints stay ints, floats stay floats,
// {"$vector": [...]} and {"$bytes": "..."} for what JSON lacks), never
// through map[string]any; every result is a JSON object (values.go).
// Arguments the engine refuses are bad_params with the argument's JSON
// Pointer, and every other engine error keeps the engine's code as its
// kind (errors.go). Backup, dump, load and index builds report progress
// to a client that asks for it (progress.go).
//
// The plugin reads and writes files only inside its configured files_dir
// (config.go), never at a path that leaves it ("..", absolute paths,
// symbolic links out of it), and holds no protocol logic the engine
// needs: the engine knows nothing of MCP. `mcpkit store` (command.go)
// serves the plugin alone and runs dump, load and backup from the
// command line.
package store

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/mcpkit/mcpkit/pkg/docstore"
	"github.com/mcpkit/mcpkit/pkg/mcpcore"
)

func init() {
	mcpcore.Register(mcpcore.PluginInfo{
		Name:        "store",
		Description: "embedded document store (a bbolt file or memory): typed documents, filters, indexes, schemas, backup, dump and load",
		New:         func() mcpcore.Plugin { return new(Plugin) },
		Limits:      Limits(),
	})
}

// Plugin is the document store plugin. It opens the store in Attach and
// closes it in Close.
type Plugin struct {
	cfg  *settings
	host *mcpcore.Host
	db   *docstore.Store
	// files is files_dir, through which every file access goes (nil
	// without one): os.Root refuses any name that would leave it.
	files *os.Root
	// setupErrs are the tools Attach could not add.
	setupErrs []error
}

var (
	_ mcpcore.Plugin     = (*Plugin)(nil)
	_ mcpcore.Configurer = (*Plugin)(nil)
)

// Configure implements mcpcore.Configurer: it decodes the [Config]
// strictly and resolves files_dir, so that a bad configuration stops the
// start. It opens nothing.
func (p *Plugin) Configure(raw []byte) error {
	cfg, err := parseConfig(raw)
	if err != nil {
		return err
	}
	p.cfg = cfg
	return nil
}

// Attach implements mcpcore.Plugin: it opens the store (the file is
// created when absent) and files_dir, and adds the tools. The host has
// configured the plugin first (with "{}" when the configuration has no
// plugins.store.config).
func (p *Plugin) Attach(ctx context.Context, h *mcpcore.Host) error {
	p.host = h
	db, err := docstore.Open(p.cfg.path, docstore.Options{})
	if err != nil {
		return fmt.Errorf("open the store: %w", asFileError(err))
	}
	p.db = db
	if p.cfg.filesDir != "" {
		if p.files, err = os.OpenRoot(p.cfg.filesDir); err != nil {
			return fmt.Errorf("open files_dir: %w", err)
		}
	}
	p.addDocumentTools()
	p.addQueryTools()
	p.addCollectionTools()
	p.addFileTools()
	p.addTextTools()
	p.addSearchTools()
	p.addGeoTools()
	p.addGraphTools()
	p.addWriteTool()
	return errors.Join(p.setupErrs...)
}

// Close implements mcpcore.Plugin: it closes the store (a late handler
// then fails with kind unavailable) and files_dir.
func (p *Plugin) Close(context.Context) error {
	var errs []error
	if p.db != nil {
		errs = append(errs, p.db.Close())
	}
	if p.files != nil {
		errs = append(errs, p.files.Close())
	}
	return errors.Join(errs...)
}
