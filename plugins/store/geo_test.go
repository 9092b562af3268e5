package store

import (
	"fmt"
	"math"
	"slices"
	"testing"
)

// geoOut is geo's result.
type geoOut struct {
	Hits []struct {
		ID        string `json:"id"`
		Doc       map[string]any
		Point     struct{ Lat, Lon float64 }
		DistanceM *float64 `json:"distance_m"`
	} `json:"hits"`
	NextCursor *string `json:"next_cursor"`
	Limit      int     `json:"limit"`
	Plan       *struct {
		Index      string `json:"index"`
		Cells      int    `json:"cells"`
		Candidates int    `json:"candidates"`
		InRegion   int    `json:"in_region"`
		Examined   int    `json:"examined"`
	} `json:"plan"`
}

func (g geoOut) ids() []string {
	var out []string
	for _, h := range g.Hits {
		out = append(out, h.ID)
	}
	return out
}

// storeCities stores a few cities in "cities" and indexes "loc".
func (e *env) storeCities() {
	e.t.Helper()
	for _, c := range []struct {
		id, loc string
		open    bool
	}{
		{"paris", `{"lat": 48.8566, "lon": 2.3522}`, true},
		{"london", `[-0.1278, 51.5074]`, false},
		{"brussels", `{"type": "Point", "coordinates": [4.3517, 50.8503]}`, true},
		{"suva", `{"lat": -18.1416, "lon": 178.4419}`, true},
		{"nukualofa", `[-175.2049, -21.1394]`, true},
		{"nowhere", `null`, true},
	} {
		e.ok("store", fmt.Sprintf(`{"collection": "cities", "id": %q, "doc": {"loc": %s, "open": %v}}`, c.id, c.loc, c.open))
	}
	if got := e.ok("create_geo_index", `{"collection": "cities", "field": "loc"}`); got != `{"created":true,"index":{"name":"loc","field":"loc"}}` {
		e.t.Fatalf("create_geo_index: %s", got)
	}
}

// TestGeoTool: radius (nearest first, distances in metres, a filter,
// select, pages) and box queries (across the antimeridian) over MCP.
func TestGeoTool(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		e.storeCities()
		g := okAs[geoOut](e, "geo", `{"collection": "cities", "near": {"lat": 48.8566, "lon": 2.3522, "radius_m": 400000}, "explain": true}`)
		if !slices.Equal(g.ids(), []string{"paris", "brussels", "london"}) || g.Limit != 100 || g.NextCursor != nil {
			t.Fatalf("around Paris: %+v", g)
		}
		if d := *g.Hits[2].DistanceM; math.Abs(d-343556.5) > 1 {
			t.Errorf("Paris–London: %v m", d)
		}
		if p := g.Hits[2].Point; p.Lat != 51.5074 || p.Lon != -0.1278 {
			t.Errorf("London's point: %+v", p)
		}
		if g.Plan == nil || g.Plan.Index != "loc" || g.Plan.Cells == 0 || g.Plan.InRegion != 3 || g.Plan.Examined != 3 {
			t.Errorf("plan %+v", g.Plan)
		}
		g = okAs[geoOut](e, "geo", `{"collection": "cities", "near": {"lat": 48.8566, "lon": 2.3522, "radius_m": 400000}, "filter": {"open": true}, "select": ["open"], "limit": 1}`)
		if !slices.Equal(g.ids(), []string{"paris"}) || g.NextCursor == nil || len(g.Hits[0].Doc) != 1 {
			t.Fatalf("open, one: %+v", g)
		}
		g = okAs[geoOut](e, "geo", fmt.Sprintf(`{"collection": "cities", "near": {"lat": 48.8566, "lon": 2.3522, "radius_m": 400000}, "filter": {"open": true}, "limit": 1, "cursor": %q}`, *g.NextCursor))
		if !slices.Equal(g.ids(), []string{"brussels"}) {
			t.Errorf("open, the next page: %+v", g)
		}
		g = okAs[geoOut](e, "geo", `{"collection": "cities", "box": {"south": -25, "west": 170, "north": -10, "east": -170}}`)
		if !slices.Equal(g.ids(), []string{"nukualofa", "suva"}) || g.Hits[0].DistanceM != nil {
			t.Errorf("across the antimeridian: %+v", g)
		}
		if got := e.ok("geo", `{"collection": "cities", "box": {"south": -25, "west": -170, "north": -10, "east": 170}}`); got != `{"hits":[],"next_cursor":null,"limit":100}` {
			t.Errorf("the box the other way round: %s", got)
		}
		// Idempotent creation; the index in list_collections.
		if got := e.ok("create_geo_index", `{"collection": "cities", "field": "loc", "name": "loc"}`); got != `{"created":false,"index":{"name":"loc","field":"loc"}}` {
			t.Errorf("again: %s", got)
		}
		cols := okAs[struct {
			Collections []struct {
				GeoIndexes []struct{ Name, Field string } `json:"geo_indexes"`
			}
		}](e, "list_collections", `{}`)
		if len(cols.Collections) != 1 || len(cols.Collections[0].GeoIndexes) != 1 {
			t.Errorf("list_collections: %+v", cols)
		}
	})
}

// TestGeoToolErrors: every bad argument is bad_params at its place, and
// engine conditions keep their kind.
func TestGeoToolErrors(t *testing.T) {
	e := connect(t, Config{})
	e.storeCities()
	near := `"near": {"lat": 0, "lon": 0, "radius_m": 1}`
	for args, path := range map[string]string{
		`{"collection": "cities"}`: "",
		`{"collection": "cities", ` + near + `, "box": {"south": 0, "west": 0, "north": 1, "east": 1}}`: "",
		`{"collection": "cities", "near": {"lat": 91, "lon": 0, "radius_m": 1}}`:                        "/near/lat",
		`{"collection": "cities", "near": {"lat": 0, "lon": 180.5, "radius_m": 1}}`:                     "/near/lon",
		`{"collection": "cities", "near": {"lat": 0, "lon": 0, "radius_m": 0}}`:                         "/near/radius_m",
		`{"collection": "cities", "near": {"lat": 0, "lon": 0}}`:                                        "/near/radius_m",
		`{"collection": "cities", "box": {"south": 10, "west": 0, "north": 5, "east": 1}}`:              "/box",
		`{"collection": "cities", ` + near + `, "index": "nope"}`:                                       "/index",
		`{"collection": "cities", ` + near + `, "cursor": "nope"}`:                                      "/cursor",
		`{"collection": "cities", ` + near + `, "filter": {"open": {"$gt": []}}}`:                       "/filter/open/$gt",
		`{"collection": "cities", ` + near + `, "limit": 0}`:                                            "/limit",
	} {
		e.badParams("geo", args, path)
	}
	e.fail("geo", `{"collection": "none", `+near+`}`, "collection_not_found")
	e.ok("store", `{"collection": "plain", "id": 1, "doc": {}}`)
	e.badParams("geo", `{"collection": "plain", `+near+`}`, "/index")
	// create_geo_index.
	e.badParams("create_geo_index", `{"collection": "cities", "field": "$x"}`, "/field")
	e.badParams("create_geo_index", `{"collection": "cities", "field": ""}`, "/field")
	e.fail("create_geo_index", `{"collection": "cities", "field": "open", "name": "loc"}`, "index_exists")
	r := e.badParams("create_geo_index", `{"collection": "cities", "field": "open"}`, "/field")
	if r.Error.Message == "" {
		t.Error("no message for a field that holds no point")
	}
	// A write whose point is not one.
	e.badParams("store", `{"collection": "cities", "id": "x", "doc": {"loc": {"lat": 100, "lon": 0}}}`, "/doc")
	e.badParams("patch", `{"collection": "cities", "id": "paris", "patch": {"loc": "here"}}`, "/patch")
}
