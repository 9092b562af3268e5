package docstore

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"slices"

	"github.com/golang/geo/r1"
	"github.com/golang/geo/s1"
	"github.com/golang/geo/s2"

	"github.com/mcpkit/mcpkit/pkg/docstore/kv"
)

// Geo indexes. A geo index on a point field keeps, per document whose
// field holds a point, one entry in the bucket g\x00<coll>\x00<index>:
//
//	8-byte big-endian S2 leaf cell id of the point + key(id) → lat, lon
//	(two big-endian float64 bits, degrees)
//
// so that the points of an S2 cell are one key range. A query covers its
// region (a spherical cap, or a latitude/longitude rectangle) with a few
// cells (s2.RegionCoverer), reads their ranges, and tests each candidate's
// stored point exactly (haversine distance, or the box's bounds) before
// reading its document.
//
// A point is a map {"lat": <number>, "lon": <number>}, an array [lon, lat]
// of two numbers (GeoJSON's order), or a GeoJSON Point {"type": "Point",
// "coordinates": [lon, lat]} (other members ignored); latitudes lie in
// [-90, 90] and longitudes in [-180, 180] (WGS84 degrees, on a sphere of
// the Earth's mean radius). A document whose field is missing or null is not indexed;
// a write whose field holds anything else is refused (CodeInvalid), as is
// the creation of an index over documents that hold a bad point.

// EarthRadius is the sphere's radius geo distances are computed on: the
// Earth's mean radius (IUGG), in metres.
const EarthRadius = 6_371_008.8

// GeoIndexDef defines a geo index on a point field.
type GeoIndexDef struct {
	Name  string `json:"name"`
	Field string `json:"field"`
}

func (d GeoIndexDef) clone() GeoIndexDef { return d }

func geoBucket(coll, index string) []byte {
	return []byte("g\x00" + coll + "\x00" + index)
}

// LatLon is a point in degrees.
type LatLon struct {
	Lat float64 `json:"lat"`
	Lon float64 `json:"lon"`
}

// checkLatLon validates a point given to a query; what names it.
func checkLatLon(coll, what string, p LatLon) error {
	if !(p.Lat >= -90 && p.Lat <= 90) || !(p.Lon >= -180 && p.Lon <= 180) {
		return &Error{Code: CodeInvalid, Collection: coll, Field: what,
			Message: fmt.Sprintf("%s (%v, %v): latitude must be in [-90, 90] and longitude in [-180, 180]", what, p.Lat, p.Lon)}
	}
	return nil
}

// pointOf reads a document's point at field: ok is false when the field
// is missing or null; an error when it holds something not a point.
func pointOf(coll string, id Value, field string, doc Value) (LatLon, bool, error) {
	v, present := doc.Path(field)
	if !present || v.IsNull() {
		return LatLon{}, false, nil
	}
	if t, _ := v.Get("type"); v.Kind() == KindMap && Equal(t, Text("Point")) {
		v, _ = v.Get("coordinates") // a GeoJSON Point
	}
	var p LatLon
	var latOK, lonOK bool
	if items, isArr := v.Array(); isArr {
		if len(items) == 2 {
			p.Lon, lonOK = items[0].Number()
			p.Lat, latOK = items[1].Number()
		}
	} else if v.Kind() == KindMap {
		lat, _ := v.Get("lat")
		lon, _ := v.Get("lon")
		p.Lat, latOK = lat.Number()
		p.Lon, lonOK = lon.Number()
	}
	if !latOK || !lonOK {
		return LatLon{}, false, &Error{Code: CodeInvalid, Collection: coll, ID: &id, Field: field,
			Message: fmt.Sprintf("document %s in %q: field %q is not a point: want {\"lat\": <number>, \"lon\": <number>}, [lon, lat] or a GeoJSON Point {\"type\": \"Point\", \"coordinates\": [lon, lat]}", idString(id), coll, field)}
	}
	if err := checkLatLon(coll, field, p); err != nil {
		err.(*Error).ID = &id
		err.(*Error).Message = fmt.Sprintf("document %s in %q: field %s", idString(id), coll, err.(*Error).Message)
		return LatLon{}, false, err
	}
	return p, true, nil
}

// geoEntry returns a point's entry: its key (cell + id key) and value.
func geoEntry(p LatLon, idKey []byte) (key, val []byte) {
	cell := s2.CellIDFromLatLng(s2.LatLngFromDegrees(p.Lat, p.Lon))
	key = binary.BigEndian.AppendUint64(make([]byte, 0, 8+len(idKey)), uint64(cell))
	key = append(key, idKey...)
	val = binary.BigEndian.AppendUint64(make([]byte, 0, 16), math.Float64bits(p.Lat))
	val = binary.BigEndian.AppendUint64(val, math.Float64bits(p.Lon))
	return key, val
}

// decodeGeoEntry returns an entry's id key and point.
func decodeGeoEntry(k, v []byte) ([]byte, LatLon, error) {
	if len(k) <= 8 || len(v) != 16 {
		return nil, LatLon{}, fmt.Errorf("docstore: corrupt geo entry %x", k)
	}
	return k[8:], LatLon{Lat: math.Float64frombits(binary.BigEndian.Uint64(v)), Lon: math.Float64frombits(binary.BigEndian.Uint64(v[8:]))}, nil
}

// CreateGeoIndex creates the geo index def on coll (created if absent) and
// builds it over the existing documents in one transaction; it reports
// false when an identical index exists. An index of that name with another
// field fails with index_exists; a document whose field holds something
// that is not a point fails it with invalid, naming the document.
func (s *Store) CreateGeoIndex(ctx context.Context, coll string, def GeoIndexDef, progress Progress) (bool, error) {
	if err := checkName("index", def.Name); err != nil {
		return false, err
	}
	if err := checkIndexDef(coll, IndexDef{Name: def.Name, Fields: []string{def.Field}}); err != nil {
		return false, err
	}
	return geoIndexes.create(s, coll, def, func(tx kv.Tx, col *collection) error {
		if _, err := tx.CreateBucketIfNotExists(geoBucket(coll, def.Name)); err != nil {
			return err
		}
		// A writer that keeps this index alone builds it.
		w := &writer{tx: tx, col: &collection{Name: coll, derivedDefs: derivedDefs{GeoIndexes: []GeoIndexDef{def}}}, docs: tx.Bucket(docsBucket(coll))}
		return scanDocs(ctx, tx, coll, progress, func(k []byte, d Doc) error {
			return w.deriveGeo(docChange{ID: d.ID, IDKey: k, New: d.Value, HasNew: true})
		})
	})
}

// deriveGeo keeps every geo index of the collection for c.
func (w *writer) deriveGeo(c docChange) error {
	for _, def := range w.col.GeoIndexes {
		var oldKey, newKey, newVal []byte
		if c.HadOld {
			// The old value was checked when it was written.
			if p, ok, _ := pointOf(w.col.Name, c.ID, def.Field, c.Old); ok {
				oldKey, _ = geoEntry(p, c.IDKey)
			}
		}
		if c.HasNew {
			p, ok, err := pointOf(w.col.Name, c.ID, def.Field, c.New)
			if err != nil {
				return err
			}
			if ok {
				newKey, newVal = geoEntry(p, c.IDKey)
			}
		}
		gb := w.tx.Bucket(geoBucket(w.col.Name, def.Name))
		if oldKey != nil && !bytes.Equal(oldKey, newKey) {
			if err := gb.Delete(oldKey); err != nil {
				return err
			}
		}
		if newKey != nil {
			if err := gb.Put(newKey, newVal); err != nil {
				return err
			}
		}
	}
	return nil
}

// dropGeo deletes col's geo indexes.
func dropGeo(tx kv.Tx, col *collection) error { return geoIndexes.drop(tx, col) }

// verifyGeo checks that each geo index of col holds exactly the entries
// its documents give.
func verifyGeo(ctx context.Context, tx kv.Tx, col *collection) error {
	for _, def := range col.GeoIndexes {
		gb := tx.Bucket(geoBucket(col.Name, def.Name))
		if gb == nil {
			return fmt.Errorf("docstore: verify: geo index %q of %q has no bucket", def.Name, col.Name)
		}
		want := map[string]string{}
		docs := tx.Bucket(docsBucket(col.Name))
		r := &reader{tx: tx, col: col, docs: docs}
		c := docs.Cursor()
		for k, v := c.First(); k != nil; k, v = c.Next() {
			d, err := r.load(k, v)
			if err != nil {
				return fmt.Errorf("docstore: verify: %w", err)
			}
			p, ok, err := pointOf(col.Name, d.ID, def.Field, d.Value)
			if err != nil {
				return fmt.Errorf("docstore: verify: geo index %q: %w", def.Name, err)
			}
			if ok {
				ek, ev := geoEntry(p, k)
				want[string(ek)] = string(ev)
			}
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		n := 0
		gc := gb.Cursor()
		for k, v := gc.First(); k != nil; k, v = gc.Next() {
			if ev, ok := want[string(k)]; !ok || ev != string(v) {
				return fmt.Errorf("docstore: verify: geo index %q of %q has entry %x that no document gives", def.Name, col.Name, k)
			}
			n++
		}
		if n != len(want) {
			return fmt.Errorf("docstore: verify: geo index %q of %q has %d entries for %d points", def.Name, col.Name, n, len(want))
		}
	}
	return nil
}

// GeoNear is a radius query: the points within Radius metres of Center.
type GeoNear struct {
	Center LatLon
	Radius float64 // metres, > 0
}

// GeoBox is a bounding box query. West > East means the box crosses the
// antimeridian (it holds longitudes from West to 180 and from -180 to
// East); West -180 and East 180 span every longitude.
type GeoBox struct {
	South, West, North, East float64
}

// GeoQuery selects documents of a collection by a geo index. Exactly one
// of Near and Box is set.
type GeoQuery struct {
	// Index names the geo index; "" when the collection has exactly one.
	Index string
	Near  *GeoNear
	Box   *GeoBox
	// Filter further selects documents (nil: all).
	Filter *Filter
	// Select projects each document onto these dotted paths (nil: the
	// whole document; empty: none of it, an empty map).
	Select []string
	// Limit is the page size: 0 means DefaultLimit, more than MaxLimit
	// is clamped to it.
	Limit int
	// Cursor continues after the page that returned it.
	Cursor string
}

// GeoHit is one document a geo query found.
type GeoHit struct {
	Doc Doc
	// Point is the document's indexed point.
	Point LatLon
	// Distance is the great-circle distance to a Near query's centre, in
	// metres (0 for a Box query).
	Distance float64
}

// GeoPlan says how a geo query found its documents.
type GeoPlan struct {
	Index string `json:"index"`
	// Cells is how many S2 cells (key ranges) covered the region.
	Cells int `json:"cells"`
	// Candidates counts the index entries read in those cells; InRegion
	// those whose point is in the region exactly.
	Candidates int `json:"candidates"`
	InRegion   int `json:"in_region"`
	// Examined counts the documents read and tested against the filter.
	Examined int `json:"examined"`
}

// GeoResult is one page of a geo query: hits nearest first for Near, in
// id order for Box.
type GeoResult struct {
	Hits []GeoHit
	// Next is the cursor of the next page, "" after the last.
	Next string
	Plan GeoPlan
}

// geoCandidate is a point in the query's region.
type geoCandidate struct {
	idKey []byte
	p     LatLon
	dist  float64
}

// Haversine returns the great-circle distance between a and b on a sphere
// of EarthRadius, in metres.
func Haversine(a, b LatLon) float64 {
	const rad = math.Pi / 180
	dLat := (b.Lat - a.Lat) * rad
	dLon := (b.Lon - a.Lon) * rad
	h := math.Sin(dLat/2)*math.Sin(dLat/2) + math.Cos(a.Lat*rad)*math.Cos(b.Lat*rad)*math.Sin(dLon/2)*math.Sin(dLon/2)
	return 2 * EarthRadius * math.Asin(math.Sqrt(min(h, 1)))
}

// geoSlack widens a region's covering (radians: about 6 mm) so that a point
// on its boundary is never lost to rounding; the exact test decides.
const geoSlack = 1e-9

// region returns q's region for covering and its exact test (with the
// distance from a Near query's centre).
func (q GeoQuery) region(coll string) (s2.Region, func(LatLon) (float64, bool), error) {
	switch {
	case (q.Near == nil) == (q.Box == nil):
		return nil, nil, &Error{Code: CodeInvalid, Collection: coll, Field: "near", Message: "a geo query has exactly one of near and box"}
	case q.Near != nil:
		n := *q.Near
		if err := checkLatLon(coll, "near.center", n.Center); err != nil {
			return nil, nil, err
		}
		if !(n.Radius > 0) || math.IsInf(n.Radius, 0) {
			return nil, nil, &Error{Code: CodeInvalid, Collection: coll, Field: "near.radius", Message: fmt.Sprintf("radius %v: want a positive number of metres", n.Radius)}
		}
		angle := s1.Angle(math.Min(n.Radius/EarthRadius, math.Pi) + geoSlack)
		capr := s2.CapFromCenterAngle(s2.PointFromLatLng(s2.LatLngFromDegrees(n.Center.Lat, n.Center.Lon)), angle)
		return capr, func(p LatLon) (float64, bool) {
			d := Haversine(n.Center, p)
			return d, d <= n.Radius
		}, nil
	}
	b := *q.Box
	if !(b.South >= -90 && b.North <= 90 && b.South <= b.North) {
		return nil, nil, &Error{Code: CodeInvalid, Collection: coll, Field: "box",
			Message: fmt.Sprintf("box south %v, north %v: want -90 <= south <= north <= 90", b.South, b.North)}
	}
	if !(b.West >= -180 && b.West <= 180 && b.East >= -180 && b.East <= 180) {
		return nil, nil, &Error{Code: CodeInvalid, Collection: coll, Field: "box",
			Message: fmt.Sprintf("box west %v, east %v: want longitudes in [-180, 180] (west > east crosses the antimeridian)", b.West, b.East)}
	}
	const rad = math.Pi / 180
	lng := s1.IntervalFromEndpoints(b.West*rad, b.East*rad)
	switch {
	case b.West == -180 && b.East == 180:
		lng = s1.FullInterval()
	case lng.IsEmpty():
		// West 180 and east -180: the antimeridian alone (S2 reads the
		// endpoints as its empty interval).
		lng = s1.Interval{Lo: math.Pi, Hi: math.Pi}
	}
	rect := s2.Rect{
		Lat: r1.Interval{Lo: math.Max(b.South*rad-geoSlack, -math.Pi/2), Hi: math.Min(b.North*rad+geoSlack, math.Pi/2)},
		Lng: lng.Expanded(geoSlack),
	}
	wraps := b.West > b.East
	return rect, func(p LatLon) (float64, bool) {
		if p.Lat < b.South || p.Lat > b.North {
			return 0, false
		}
		// -180 and 180 are one meridian.
		in := func(lon float64) bool {
			if wraps {
				return lon >= b.West || lon <= b.East
			}
			return lon >= b.West && lon <= b.East
		}
		return 0, in(p.Lon) || (p.Lon == -180 && in(180)) || (p.Lon == 180 && in(-180))
	}, nil
}

// geoIndexOf returns the geo index q names (or the only one).
func (r *reader) geoIndexOf(name string) (GeoIndexDef, error) {
	coll := r.col.Name
	if name == "" {
		if len(r.col.GeoIndexes) == 1 {
			return r.col.GeoIndexes[0], nil
		}
		return GeoIndexDef{}, &Error{Code: CodeInvalid, Collection: coll, Field: "index",
			Message: fmt.Sprintf("collection %q has %d geo indexes: name one (create one with create_geo_index)", coll, len(r.col.GeoIndexes))}
	}
	i := slices.IndexFunc(r.col.GeoIndexes, func(d GeoIndexDef) bool { return d.Name == name })
	if i < 0 {
		return GeoIndexDef{}, &Error{Code: CodeInvalid, Collection: coll, Field: "index", Message: fmt.Sprintf("collection %q has no geo index %q", coll, name)}
	}
	return r.col.GeoIndexes[i], nil
}

// geoCoverer covers query regions: a few cells, any level.
var geoCoverer = &s2.RegionCoverer{MinLevel: 0, MaxLevel: s2.MaxLevel, LevelMod: 1, MaxCells: 16}

// Geo returns one page of the documents of coll whose point (in a geo
// index) lies in q's region and that match q.Filter: nearest first with
// their distance for a Near query, in id order for a Box query.
func (s *Store) Geo(ctx context.Context, coll string, q GeoQuery) (GeoResult, error) {
	var out GeoResult
	limit := clampLimit(q.Limit)
	err := s.view(ctx, coll, func(r *reader) error {
		out = GeoResult{}
		def, err := r.geoIndexOf(q.Index)
		if err != nil {
			return err
		}
		reg, test, err := q.region(coll)
		if err != nil {
			return err
		}
		kind := byte('b')
		if q.Near != nil {
			kind = 'n'
		}
		after, err := decodeCursor(coll, q.Cursor, kind, false, def.Name)
		if err != nil {
			return err
		}
		out.Plan.Index = def.Name
		cands, err := r.geoCandidates(ctx, def, reg, test, &out.Plan)
		if err != nil {
			return err
		}
		// Order: by (distance, id) for near, by id for a box; a cursor
		// is the last hit's sort key.
		sortKey := func(c geoCandidate) []byte {
			if kind == 'b' {
				return c.idKey
			}
			return append(binary.BigEndian.AppendUint64(nil, math.Float64bits(c.dist)), c.idKey...)
		}
		slices.SortFunc(cands, func(a, b geoCandidate) int {
			if kind == 'n' {
				if c := cmpFloat(a.dist, b.dist); c != 0 {
					return c
				}
			}
			return bytes.Compare(a.idKey, b.idKey)
		})
		start := 0
		if after != nil {
			start, _ = slices.BinarySearchFunc(cands, after, func(c geoCandidate, k []byte) int { return bytes.Compare(sortKey(c), k) })
			if start < len(cands) && bytes.Equal(sortKey(cands[start]), after) {
				start++
			}
		}
		var last geoCandidate
		for _, c := range cands[start:] {
			if len(out.Hits) == limit {
				out.Next = encodeCursor(kind, false, def.Name, sortKey(last))
				break
			}
			v := r.docs.Get(c.idKey)
			if v == nil {
				return fmt.Errorf("docstore: geo index %q of %q names a missing document", def.Name, coll)
			}
			d, err := r.load(c.idKey, v)
			if err != nil {
				return err
			}
			out.Plan.Examined++
			if q.Filter != nil && !q.Filter.Match(d.Value) {
				continue
			}
			out.Hits = append(out.Hits, GeoHit{Doc: project(d, q.Select), Point: c.p, Distance: c.dist})
			last = c
		}
		return nil
	})
	return out, err
}

// cmpFloat orders two non-NaN floats.
func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// geoCandidates reads the index entries in the cells covering reg and
// returns those whose point passes test.
func (r *reader) geoCandidates(ctx context.Context, def GeoIndexDef, reg s2.Region, test func(LatLon) (float64, bool), plan *GeoPlan) ([]geoCandidate, error) {
	gb := r.tx.Bucket(geoBucket(r.col.Name, def.Name))
	if gb == nil {
		return nil, fmt.Errorf("docstore: geo index %q of %q has no bucket", def.Name, r.col.Name)
	}
	cells := geoCoverer.Covering(reg)
	plan.Cells = len(cells)
	var out []geoCandidate
	var err error
	for _, cell := range cells {
		lo := binary.BigEndian.AppendUint64(nil, uint64(cell.RangeMin()))
		hi := prefixEnd(binary.BigEndian.AppendUint64(nil, uint64(cell.RangeMax())))
		scanRange(gb, keyRange{lo: lo, hi: hi}, nil, false, func(k, v []byte) bool {
			plan.Candidates++
			var c geoCandidate
			if c.idKey, c.p, err = decodeGeoEntry(k, v); err != nil {
				return false
			}
			var in bool
			if c.dist, in = test(c.p); in {
				out = append(out, c)
			}
			if plan.Candidates%4096 == 0 {
				err = ctx.Err()
			}
			return err == nil
		})
		if err != nil {
			return nil, err
		}
	}
	plan.InRegion = len(out)
	return out, nil
}
