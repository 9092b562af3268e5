package store

import (
	"context"
	"reflect"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/mcpkit/mcpkit/pkg/docstore"
	"github.com/mcpkit/mcpkit/pkg/mcpcore"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The argument types of the geo tools, with their JSON Schemas (added to
// argTypeSchemas).
type (
	// latitude is a latitude in degrees, in [-90, 90].
	latitude float64
	// longitude is a longitude in degrees, in [-180, 180].
	longitude float64
	// metres is a positive distance in metres.
	metres float64
)

func init() {
	for t, s := range map[reflect.Type]*jsonschema.Schema{
		reflect.TypeFor[latitude]():  {Type: "number", Minimum: jsonschema.Ptr(-90.0), Maximum: jsonschema.Ptr(90.0)},
		reflect.TypeFor[longitude](): {Type: "number", Minimum: jsonschema.Ptr(-180.0), Maximum: jsonschema.Ptr(180.0)},
		reflect.TypeFor[metres]():    {Type: "number", ExclusiveMinimum: jsonschema.Ptr(0.0)},
	} {
		argTypeSchemas[t] = s
	}
}

// pointHelp says what a point field holds.
const pointHelp = `a point: {"lat": <degrees>, "lon": <degrees>}, a GeoJSON-ordered array [lon, lat], or a GeoJSON Point {"type": "Point", "coordinates": [lon, lat]} (WGS84 degrees, latitude in [-90, 90], longitude in [-180, 180])`

// addGeoTools adds create_geo_index and geo.
func (p *Plugin) addGeoTools() {
	addTool(p, &mcp.Tool{Name: "create_geo_index", Description: "Create a geo index on a point field, named after the field unless name is given: each document's field holds " + pointHelp + `. A document without the field (or with null) is not indexed; a write whose field holds anything else is refused (bad_params), as is the index over documents that already do. Builds it over the existing documents in one transaction (sending progress notifications when the request has a progress token). Returns {created, index: {name, field}}: created is false when an identical index exists; an index of that name on another field fails with index_exists. The geo tool queries it.`,
		Annotations: &mcp.ToolAnnotations{IdempotentHint: true, OpenWorldHint: new(false)}}, p.createGeoIndex, mcpcore.ToolOptions{Timeout: buildTimeout})
	addTool(p, &mcp.Tool{Name: "geo", Description: `Find the documents of a collection whose point (in a geo index, see create_geo_index) lies within a radius of a point or inside a bounding box, optionally also matching a filter. Give exactly one of near {lat, lon, radius_m} (great-circle distance on the mean-radius Earth, haversine; hits nearest first, each with distance_m) and box {south, west, north, east} (hits in id order; west > east crosses the antimeridian, e.g. {"south": -25, "west": 170, "north": -10, "east": -170} spans Fiji and Tonga; north 90 reaches the pole). Example: {"collection": "shops", "near": {"lat": 48.8566, "lon": 2.3522, "radius_m": 2000}, "filter": {"open": true}, "limit": 5}. Returns {hits: [{id, doc, point: {lat, lon}, distance_m?}], next_cursor, limit} (no revision: get returns it): pass next_cursor back (same query) for the next page; null after the last. limit defaults to 100 and is clamped to 10000. explain adds the plan: {index, cells (S2 cells covering the region), candidates (index entries read), in_region, examined (documents read)}.`,
		Annotations: readOnly()}, p.geo)
}

type createGeoIndexArgs struct {
	Collection collectionName `json:"collection"`
	Field      fieldPath      `json:"field" jsonschema:"the point field, a dotted path (\"address.location\"); each document's holds {\"lat\", \"lon\"}, [lon, lat] or a GeoJSON Point"`
	Name       indexName      `json:"name,omitempty" jsonschema:"the index's name: 1 to 256 bytes without NUL (default: the field)"`
}

// geoIndexReply is create_geo_index's result.
type geoIndexReply struct {
	Created bool                 `json:"created"`
	Index   docstore.GeoIndexDef `json:"index"`
}

func (p *Plugin) createGeoIndex(ctx context.Context, req *mcp.CallToolRequest, in createGeoIndexArgs) (any, error) {
	def := docstore.GeoIndexDef{Name: string(in.Name), Field: string(in.Field)}
	if def.Name == "" {
		def.Name = def.Field
	}
	created, err := p.db.CreateGeoIndex(ctx, string(in.Collection), def, progressOf(ctx, p.host, req, "documents indexed"))
	if err != nil {
		return nil, engineFailure(err, func(e *docstore.Error) string {
			if isNameError(e) {
				return "" // the collection's or the index's name: the message says which
			}
			return "/field" // the field's path, or a document's field that holds no point
		})
	}
	return geoIndexReply{Created: created, Index: def}, nil
}

// nearArg is geo's radius query.
type nearArg struct {
	Lat     latitude  `json:"lat" jsonschema:"the centre's latitude, degrees in [-90, 90]"`
	Lon     longitude `json:"lon" jsonschema:"the centre's longitude, degrees in [-180, 180]"`
	RadiusM metres    `json:"radius_m" jsonschema:"the radius in metres (more than 0; 20016000 or more covers the whole Earth)"`
}

// boxArg is geo's bounding box.
type boxArg struct {
	South latitude  `json:"south" jsonschema:"the southern edge's latitude, degrees, at most north"`
	West  longitude `json:"west" jsonschema:"the western edge's longitude, degrees; greater than east when the box crosses the antimeridian"`
	North latitude  `json:"north" jsonschema:"the northern edge's latitude, degrees"`
	East  longitude `json:"east" jsonschema:"the eastern edge's longitude, degrees"`
}

type geoArgs struct {
	Collection collectionName `json:"collection"`
	Index      indexName      `json:"index,omitempty" jsonschema:"the geo index to query (may be omitted when the collection has exactly one)"`
	Near       *nearArg       `json:"near,omitempty" jsonschema:"find the points within radius_m metres of (lat, lon), nearest first: {lat, lon, radius_m}. Give this or box."`
	Box        *boxArg        `json:"box,omitempty" jsonschema:"find the points inside a latitude/longitude box, edges included: {south, west, north, east}. Give this or near."`
	Filter     filterArg      `json:"filter,omitempty"`
	Select     []fieldPath    `json:"select,omitempty" jsonschema:"dotted paths to keep in each document, vectors included (default: the whole document, vectors left out; []: no document, the ids only)"`
	Vectors    vectorsArg     `json:"vectors,omitempty"`
	Limit      pageLimit      `json:"limit,omitempty" jsonschema:"the page size: default 100; larger than 10000 is clamped to 10000"`
	Cursor     cursorArg      `json:"cursor,omitempty" jsonschema:"the next_cursor of the previous page (same query), to continue after it"`
	Explain    bool           `json:"explain,omitempty" jsonschema:"add the query plan to the reply"`
}

// geoPoint is a point in a reply.
type geoPoint struct {
	Lat float64 `json:"lat"`
	Lon float64 `json:"lon"`
}

// geoHit is one hit of geo.
type geoHit struct {
	hitDoc
	Point geoPoint `json:"point"`
	// DistanceM is the distance to near's centre in metres (near only).
	DistanceM *float64 `json:"distance_m,omitempty"`
}

// geoReply is geo's result.
type geoReply struct {
	Hits       []geoHit          `json:"hits"`
	NextCursor *string           `json:"next_cursor"`
	Limit      int               `json:"limit"`
	Plan       *docstore.GeoPlan `json:"plan,omitempty"`
}

func (p *Plugin) geo(ctx context.Context, _ *mcp.CallToolRequest, in geoArgs) (any, error) {
	if (in.Near == nil) == (in.Box == nil) {
		return nil, &mcpcore.ParamError{Reason: "give exactly one of near ({lat, lon, radius_m}) and box ({south, west, north, east})"}
	}
	f, err := in.Filter.filter("/filter")
	if err != nil {
		return nil, err
	}
	limit := clampPage(int(in.Limit))
	q := docstore.GeoQuery{Index: string(in.Index), Filter: f, Select: paths(in.Select), Limit: limit, Cursor: string(in.Cursor)}
	if n := in.Near; n != nil {
		q.Near = &docstore.GeoNear{Center: docstore.LatLon{Lat: float64(n.Lat), Lon: float64(n.Lon)}, Radius: float64(n.RadiusM)}
	}
	if b := in.Box; b != nil {
		q.Box = &docstore.GeoBox{South: float64(b.South), West: float64(b.West), North: float64(b.North), East: float64(b.East)}
	}
	res, err := p.db.Geo(ctx, string(in.Collection), q)
	if err != nil {
		return nil, engineFailure(err, func(e *docstore.Error) string {
			switch e.Field {
			case "index", "cursor":
				return "/" + e.Field
			case "box":
				return "/box"
			case "near.radius":
				return "/near/radius_m"
			case "near", "near.center":
				return "/near"
			}
			return "/collection"
		})
	}
	out := geoReply{Hits: make([]geoHit, 0, len(res.Hits)), Limit: limit}
	shape := shapeOf(in.Select, in.Vectors)
	for _, h := range res.Hits {
		d, err := replyOf(h.Doc, shape)
		if err != nil {
			return nil, err
		}
		hit := geoHit{hitDoc: d.hit(), Point: geoPoint{Lat: h.Point.Lat, Lon: h.Point.Lon}}
		if in.Near != nil {
			hit.DistanceM = &h.Distance
		}
		out.Hits = append(out.Hits, hit)
	}
	if res.Next != "" {
		out.NextCursor = &res.Next
	}
	if in.Explain {
		out.Plan = &res.Plan
	}
	return out, nil
}

// clampPage applies the default page size and the maximum to a limit.
func clampPage(limit int) int {
	switch {
	case limit == 0:
		return docstore.DefaultLimit
	case limit > docstore.MaxLimit:
		return docstore.MaxLimit
	}
	return limit
}
