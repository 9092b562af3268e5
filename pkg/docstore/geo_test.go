package docstore

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/mcpkit/mcpkit/pkg/docstore/kv"
)

// cities are points with known great-circle distances between them.
var cities = []struct {
	id, country string
	lat, lon    float64
}{
	{"paris", "FR", 48.8566, 2.3522},
	{"london", "UK", 51.5074, -0.1278},
	{"brussels", "BE", 50.8503, 4.3517},
	{"amsterdam", "NL", 52.3676, 4.9041},
	{"sydney", "AU", -33.8688, 151.2093},
	{"auckland", "NZ", -36.8485, 174.7633},
	{"suva", "FJ", -18.1416, 178.4419},
	{"nukualofa", "TO", -21.1394, -175.2049},
	{"apia", "WS", -13.8333, -171.7667},
	{"honolulu", "US", 21.3069, -157.8583},
	{"pole-a", "", 89.9, 0},
	{"pole-b", "", 89.9, 90},
	{"pole-c", "", 89.9, -179.9},
	{"pole-d", "", 89.95, 180},
	{"south-pole", "", -89.9, 45},
}

// fillCities stores the cities in coll, as {"lat","lon"} maps, [lon, lat]
// arrays and GeoJSON Points in turn, and indexes them.
func fillCities(t *testing.T, s *Store, coll string) {
	t.Helper()
	ctx := context.Background()
	for i, c := range cities {
		loc := fmt.Sprintf(`{"lat": %v, "lon": %v}`, c.lat, c.lon)
		switch i % 3 {
		case 1:
			loc = fmt.Sprintf(`[%v, %v]`, c.lon, c.lat)
		case 2:
			loc = fmt.Sprintf(`{"type": "Point", "coordinates": [%v, %v]}`, c.lon, c.lat)
		}
		if _, err := s.Put(ctx, coll, Text(c.id), j(t, fmt.Sprintf(`{"country": %q, "loc": %s}`, c.country, loc))); err != nil {
			t.Fatal(err)
		}
	}
	if created, err := s.CreateGeoIndex(ctx, coll, GeoIndexDef{Name: "loc", Field: "loc"}, nil); err != nil || !created {
		t.Fatalf("create geo index: %v, %v", created, err)
	}
}

// geoIDs runs q and returns the hits' ids (and distances, in metres,
// rounded).
func geoIDs(t *testing.T, s *Store, coll string, q GeoQuery) ([]string, []float64) {
	t.Helper()
	res, err := s.Geo(context.Background(), coll, q)
	if err != nil {
		t.Fatalf("geo %+v: %v", q, err)
	}
	var ids []string
	var ds []float64
	for _, h := range res.Hits {
		id, _ := h.Doc.ID.Text()
		ids = append(ids, id)
		ds = append(ds, math.Round(h.Distance))
	}
	return ids, ds
}

// TestHaversineKnownDistances: distances between cities as published
// (Paris–London ≈ 343.5 km) and as an independent computation on the
// same sphere gives them to the metre.
func TestHaversineKnownDistances(t *testing.T) {
	for _, c := range []struct {
		a, b LatLon
		want float64 // metres
	}{
		{LatLon{48.8566, 2.3522}, LatLon{51.5074, -0.1278}, 343556.5},       // Paris–London
		{LatLon{-33.8688, 151.2093}, LatLon{-36.8485, 174.7633}, 2155901.3}, // Sydney–Auckland
		{LatLon{-18.1416, 178.4419}, LatLon{-21.1394, -175.2049}, 744047.9}, // Suva–Nuku'alofa, across the antimeridian
		{LatLon{89.9, 0}, LatLon{89.9, 180}, 22239.0},                       // over the pole
		{LatLon{0, 0}, LatLon{0, 180}, math.Pi * EarthRadius},               // antipodes
	} {
		if got := Haversine(c.a, c.b); math.Abs(got-c.want) > 1 {
			t.Errorf("%v–%v: %.1f m, want %.1f", c.a, c.b, got, c.want)
		}
	}
}

// TestGeoRadius: a radius query returns the points within it, nearest
// first with their distances, across the antimeridian and around a pole;
// a filter narrows it; pages follow each other by cursor.
func TestGeoRadius(t *testing.T) {
	backends(t, func(t *testing.T, s *Store) {
		fillCities(t, s, "c")
		near := func(lat, lon, r float64) GeoQuery {
			return GeoQuery{Near: &GeoNear{Center: LatLon{lat, lon}, Radius: r}}
		}
		ids, ds := geoIDs(t, s, "c", near(48.8566, 2.3522, 400_000))
		if !slices.Equal(ids, []string{"paris", "brussels", "london"}) || !slices.Equal(ds, []float64{0, 263976, 343557}) {
			t.Errorf("around Paris: %v %v", ids, ds)
		}
		// 343.5 km excludes London, 343.6 km takes it.
		if ids, _ := geoIDs(t, s, "c", near(48.8566, 2.3522, 343_500)); slices.Contains(ids, "london") {
			t.Errorf("343.5 km around Paris: %v", ids)
		}
		q := near(48.8566, 2.3522, 400_000)
		q.Filter = flt(t, `{"country": "UK"}`)
		if ids, _ := geoIDs(t, s, "c", q); !slices.Equal(ids, []string{"london"}) {
			t.Errorf("around Paris, in the UK: %v", ids)
		}
		// Suva's circle crosses the antimeridian to Nuku'alofa.
		if ids, ds := geoIDs(t, s, "c", near(-18.1416, 178.4419, 800_000)); !slices.Equal(ids, []string{"suva", "nukualofa"}) || ds[1] != 744048 {
			t.Errorf("around Suva: %v %v", ids, ds)
		}
		if ids, _ := geoIDs(t, s, "c", near(-36.8485, 174.7633, 2_200_000)); !slices.Equal(ids, []string{"auckland", "nukualofa", "suva", "sydney"}) {
			t.Errorf("around Auckland: %v", ids)
		}
		// Around the north pole, every longitude.
		if ids, ds := geoIDs(t, s, "c", near(90, 0, 12_000)); !slices.Equal(ids, []string{"pole-d", "pole-a", "pole-b", "pole-c"}) || ds[0] != 5560 || ds[1] != 11120 {
			t.Errorf("around the pole: %v %v", ids, ds)
		}
		// The whole Earth.
		all, _ := geoIDs(t, s, "c", near(0, 0, 25_000_000))
		if len(all) != len(cities) {
			t.Errorf("the whole Earth: %d of %d: %v", len(all), len(cities), all)
		}
		// Paging by cursor gives the same order.
		q = near(0, 0, 25_000_000)
		q.Limit = 4
		var paged []string
		for pages := 0; ; pages++ {
			res, err := s.Geo(context.Background(), "c", q)
			if err != nil || pages > 10 {
				t.Fatal(err, pages)
			}
			for _, h := range res.Hits {
				id, _ := h.Doc.ID.Text()
				paged = append(paged, id)
			}
			if res.Next == "" {
				break
			}
			q.Cursor = res.Next
		}
		if !slices.Equal(paged, all) {
			t.Errorf("paged %v, want %v", paged, all)
		}
		q.Cursor, q.Index = paged[0], "loc"
		if _, err := s.Geo(context.Background(), "c", q); ErrorCode(err) != CodeInvalid {
			t.Errorf("a bad cursor: %v", err)
		}
	})
}

// TestGeoBox: a box query returns the points inside it, in id order,
// across the antimeridian (west > east) and up to a pole.
func TestGeoBox(t *testing.T) {
	backends(t, func(t *testing.T, s *Store) {
		fillCities(t, s, "c")
		box := func(south, west, north, east float64) []string {
			ids, _ := geoIDs(t, s, "c", GeoQuery{Box: &GeoBox{South: south, West: west, North: north, East: east}})
			return ids
		}
		for _, c := range []struct {
			name                     string
			south, west, north, east float64
			want                     []string
		}{
			{"western Europe", 48, -1, 52, 5, []string{"brussels", "london", "paris"}},
			{"across the antimeridian", -25, 170, -10, -170, []string{"apia", "nukualofa", "suva"}},
			{"the other way round", -25, -170, -10, 170, nil},
			{"the Pacific, wide", -40, 150, 25, -150, []string{"apia", "auckland", "honolulu", "nukualofa", "suva", "sydney"}},
			{"the north cap", 89, -180, 90, 180, []string{"pole-a", "pole-b", "pole-c", "pole-d"}},
			{"a slice of the cap", 89, 0, 90, 100, []string{"pole-a", "pole-b"}},
			{"the slice at 180", 89, 179, 90, -179, []string{"pole-c", "pole-d"}},
			{"east edge on 180", 89, 170, 90, 180, []string{"pole-d"}},
			{"west edge on -180", 89, -180, 90, -170, []string{"pole-c", "pole-d"}},
			{"the antimeridian alone", 89, 180, 90, -180, []string{"pole-d"}},
			{"the antimeridian, west -180", 89, -180, 90, -180, []string{"pole-d"}},
			{"the south cap", -90, -180, -89, 180, []string{"south-pole"}},
			{"an exact point", 48.8566, 2.3522, 48.8566, 2.3522, []string{"paris"}},
		} {
			if got := box(c.south, c.west, c.north, c.east); !slices.Equal(got, c.want) {
				t.Errorf("%s: %v, want %v", c.name, got, c.want)
			}
		}
	})
}

// geoPoints returns an in-memory store whose collection "c" holds n
// random points (a fifth near the north pole, a fifth near the
// antimeridian, some exactly on it and on the poles) under ids 0..n-1 in
// a geo index, and the points.
func geoPoints(tb testing.TB, n int, seed uint64) (*Store, []LatLon) {
	tb.Helper()
	s, err := Open("", Options{})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if err := s.Verify(context.Background()); err != nil {
			tb.Error(err)
		}
		s.Close()
	})
	rng := rand.New(rand.NewPCG(seed, 2))
	var pts []LatLon
	var docs []Doc
	for i := range n {
		p := LatLon{Lat: rng.Float64()*180 - 90, Lon: rng.Float64()*360 - 180}
		switch i % 5 {
		case 0:
			p.Lat = 90 - rng.Float64()*3
		case 1:
			p.Lon = 180 - rng.Float64()*4
		}
		switch i % 97 {
		case 2:
			p.Lon = 180
		case 3:
			p.Lon = -180
		case 4:
			p.Lat = 90
		case 5:
			p.Lat = -90
		}
		pts = append(pts, p)
		docs = append(docs, Doc{ID: Int(int64(i)), Value: Map(Field{"p", Map(Field{"lat", Float(p.Lat)}, Field{"lon", Float(p.Lon)})})})
	}
	ctx := context.Background()
	if _, err := s.PutMany(ctx, "c", docs); err != nil {
		tb.Fatal(err)
	}
	if _, err := s.CreateGeoIndex(ctx, "c", GeoIndexDef{Name: "p", Field: "p"}, nil); err != nil {
		tb.Fatal(err)
	}
	return s, pts
}

// inBox is a box's test, written independently of the engine's: -180 and
// 180 are one meridian.
func inBox(b GeoBox, p LatLon) bool {
	lonIn := func(lon float64) bool {
		if b.West > b.East {
			return lon >= b.West || lon <= b.East
		}
		return lon >= b.West && lon <= b.East
	}
	return p.Lat >= b.South && p.Lat <= b.North && (lonIn(p.Lon) || (math.Abs(p.Lon) == 180 && lonIn(-p.Lon)))
}

// checkGeo runs q (the whole region in one page) and fails unless it
// finds exactly the points a scan finds with in, nearest first for near.
func checkGeo(tb testing.TB, s *Store, pts []LatLon, q GeoQuery, in func(LatLon) bool) {
	tb.Helper()
	q.Limit = MaxLimit
	res, err := s.Geo(context.Background(), "c", q)
	if err != nil {
		tb.Fatal(err)
	}
	var got, want []int64
	last := 0.0
	for _, h := range res.Hits {
		id, _ := h.Doc.ID.Int()
		got = append(got, id)
		if h.Distance < last {
			tb.Fatalf("%+v: hits out of distance order", q.Near)
		}
		last = h.Distance
	}
	for i, p := range pts {
		if in(p) {
			want = append(want, int64(i))
		}
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		tb.Fatalf("%+v %+v: %d points, want %d", q.Near, q.Box, len(got), len(want))
	}
}

// TestGeoAgainstBruteForce: random caps and boxes (around the poles and
// the antimeridian too) find exactly the points a scan of every point
// finds.
func TestGeoAgainstBruteForce(t *testing.T) {
	s, pts := geoPoints(t, 800, 1)
	rng := rand.New(rand.NewPCG(1, 3))
	for range 100 {
		c := LatLon{Lat: rng.Float64()*180 - 90, Lon: rng.Float64()*360 - 180}
		if rng.IntN(3) == 0 {
			c.Lat = 90 - rng.Float64()*2
		}
		r := math.Exp(rng.Float64()*10) * 1000 // 1 km to 22,000 km
		checkGeo(t, s, pts, GeoQuery{Near: &GeoNear{Center: c, Radius: r}}, func(p LatLon) bool { return Haversine(c, p) <= r })
		b := GeoBox{South: rng.Float64()*180 - 90, West: rng.Float64()*360 - 180, East: rng.Float64()*360 - 180}
		b.North = b.South + rng.Float64()*(90-b.South)
		checkGeo(t, s, pts, GeoQuery{Box: &b}, func(p LatLon) bool { return inBox(b, p) })
	}
}

// FuzzGeo: any radius query and any box either is refused as invalid
// (exactly when its numbers are out of range) or finds exactly the points
// a scan finds.
func FuzzGeo(f *testing.F) {
	s, pts := geoPoints(f, 300, 5)
	f.Add(48.8, 2.3, 400e3, -25.0, 170.0, -10.0, -170.0)
	f.Add(90.0, 0.0, 1e3, 89.0, -180.0, 90.0, 180.0)
	f.Add(-90.0, 180.0, 3e7, -90.0, 0.0, -89.0, 0.0)
	f.Add(0.0, -180.0, 1e-3, 0.0, 180.0, 0.0, -180.0)
	f.Add(91.0, 0.0, -1.0, 10.0, 0.0, 5.0, 190.0)
	f.Fuzz(func(t *testing.T, lat, lon, radius, south, west, north, east float64) {
		c := LatLon{Lat: lat, Lon: lon}
		q := GeoQuery{Near: &GeoNear{Center: c, Radius: radius}}
		if lat < -90 || lat > 90 || lon < -180 || lon > 180 || !(radius > 0) || math.IsInf(radius, 1) || math.IsNaN(lat+lon) {
			if _, err := s.Geo(context.Background(), "c", q); ErrorCode(err) != CodeInvalid {
				t.Fatalf("near %+v: %v, want invalid", q.Near, err)
			}
		} else {
			checkGeo(t, s, pts, q, func(p LatLon) bool { return Haversine(c, p) <= radius })
		}
		b := GeoBox{South: south, West: west, North: north, East: east}
		q = GeoQuery{Box: &b}
		if !(south >= -90 && north <= 90 && south <= north && west >= -180 && west <= 180 && east >= -180 && east <= 180) {
			if _, err := s.Geo(context.Background(), "c", q); ErrorCode(err) != CodeInvalid {
				t.Fatalf("box %+v: %v, want invalid", b, err)
			}
			return
		}
		checkGeo(t, s, pts, q, func(p LatLon) bool { return inBox(b, p) })
	})
}

// TestGeoWrites: the index follows puts, patches and deletes; a point that
// is not one is refused on write and on creation; a missing or null field
// is not indexed.
func TestGeoWrites(t *testing.T) {
	backends(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		fillCities(t, s, "c")
		around := func() []string {
			ids, _ := geoIDs(t, s, "c", GeoQuery{Near: &GeoNear{Center: LatLon{48.8566, 2.3522}, Radius: 400_000}})
			return ids
		}
		if _, err := s.Patch(ctx, "c", Text("london"), j(t, `{"loc": {"lat": 40.4168, "lon": -3.7038}}`)); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Delete(ctx, "c", Text("brussels")); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Put(ctx, "c", Text("versailles"), j(t, `{"loc": [2.1204, 48.8049]}`)); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Put(ctx, "c", Text("nowhere"), j(t, `{"loc": null}`)); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Put(ctx, "c", Text("unplaced"), j(t, `{"name": "x"}`)); err != nil {
			t.Fatal(err)
		}
		if got := around(); !slices.Equal(got, []string{"paris", "versailles"}) {
			t.Errorf("after the writes: %v", got)
		}
		for _, bad := range []string{`{"lat": 91, "lon": 0}`, `{"lat": 0, "lon": -180.5}`, `"here"`, `[1]`, `[1, 2, 3]`, `{"lat": "1", "lon": 2}`, `{"lat": 1}`, `{"$vector": [1, 2]}`, `{"type": "Point", "coordinates": [1]}`, `{"type": "Point", "coordinates": [0, 95]}`, `{"type": "Point"}`} {
			_, err := s.Put(ctx, "c", Text("bad"), j(t, `{"loc": `+bad+`}`))
			if e := wantCode(t, err, CodeInvalid); e.Field != "loc" {
				t.Errorf("%s: field %q", bad, e.Field)
			}
		}
		if _, err := s.Get(ctx, "c", Text("bad")); ErrorCode(err) != CodeNotFound {
			t.Errorf("a refused point was stored: %v", err)
		}
		// Creating an index over a bad point fails and creates nothing.
		if _, err := s.Put(ctx, "c", Text("odd"), j(t, `{"loc": {"lat": 0, "lon": 0}, "other": [200, 0]}`)); err != nil {
			t.Fatal(err)
		}
		wantCode(t, second(s.CreateGeoIndex(ctx, "c", GeoIndexDef{Name: "other", Field: "other"}, nil)), CodeInvalid)
		// The same definition again creates nothing; another field under
		// the name fails.
		if created, err := s.CreateGeoIndex(ctx, "c", GeoIndexDef{Name: "loc", Field: "loc"}, nil); created || err != nil {
			t.Errorf("again: %v %v", created, err)
		}
		wantCode(t, second(s.CreateGeoIndex(ctx, "c", GeoIndexDef{Name: "loc", Field: "x"}, nil)), CodeIndexExists)
		cols, _ := s.Collections(ctx)
		if len(cols[0].GeoIndexes) != 1 {
			t.Errorf("geo indexes %v", cols[0].GeoIndexes)
		}
	})
}

func second[T any](_ T, err error) error { return err }

// TestGeoQueryErrors: queries the engine refuses, each naming its field.
func TestGeoQueryErrors(t *testing.T) {
	s := openStore(t, "memory")
	ctx := context.Background()
	near := &GeoNear{Center: LatLon{0, 0}, Radius: 1}
	if _, err := s.Geo(ctx, "none", GeoQuery{Near: near}); ErrorCode(err) != CodeCollectionNotFound {
		t.Errorf("no collection: %v", err)
	}
	if _, err := s.Put(ctx, "c", Int(1), j(t, `{"p": [0, 0], "q": [1, 1]}`)); err != nil {
		t.Fatal(err)
	}
	if e := wantCode(t, second(s.Geo(ctx, "c", GeoQuery{Near: near})), CodeInvalid); e.Field != "index" {
		t.Errorf("no geo index: %+v", e)
	}
	for _, name := range []string{"p", "q"} {
		if _, err := s.CreateGeoIndex(ctx, "c", GeoIndexDef{Name: name, Field: name}, nil); err != nil {
			t.Fatal(err)
		}
	}
	for field, q := range map[string]GeoQuery{
		"index":       {Near: near},
		"near":        {Index: "p"},
		"near.radius": {Index: "p", Near: &GeoNear{Radius: math.NaN()}},
		"near.center": {Index: "p", Near: &GeoNear{Center: LatLon{-91, 0}, Radius: 1}},
		"box":         {Index: "p", Box: &GeoBox{South: 10, North: 5}},
	} {
		if e := wantCode(t, second(s.Geo(ctx, "c", q)), CodeInvalid); e.Field != field {
			t.Errorf("%+v: field %q, want %q", q, e.Field, field)
		}
	}
	if e := wantCode(t, second(s.Geo(ctx, "c", GeoQuery{Index: "r", Near: near})), CodeInvalid); e.Field != "index" {
		t.Errorf("unknown index: %+v", e)
	}
	if e := wantCode(t, second(s.Geo(ctx, "c", GeoQuery{Index: "p", Box: &GeoBox{West: 190}})), CodeInvalid); e.Field != "box" {
		t.Errorf("bad longitude: %+v", e)
	}
	// Two indexes, each with its own points.
	for index, want := range map[string]int{"p": 0, "q": 1} {
		if ids, _ := geoIDs(t, s, "c", GeoQuery{Index: index, Near: &GeoNear{Center: LatLon{1, 1}, Radius: 10}}); len(ids) != want {
			t.Errorf("index %s around (1, 1): %d hits, want %d", index, len(ids), want)
		}
	}
}

// TestGeoPersists: the index survives reopening the file, a backup, and a
// dump loaded into another store; dropping the collection drops it.
func TestGeoPersists(t *testing.T) {
	ctx := context.Background()
	path := t.TempDir() + "/geo.db"
	s, err := Open(path, Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	fillCities(t, s, "c")
	var dump bytes.Buffer
	if _, err := s.Dump(ctx, &dump, nil, nil); err != nil {
		t.Fatal(err)
	}
	s.Close()
	want := []string{"paris", "brussels", "london"}
	q := GeoQuery{Near: &GeoNear{Center: LatLon{48.8566, 2.3522}, Radius: 400_000}}
	s2, err := Open(path, Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if ids, _ := geoIDs(t, s2, "c", q); !slices.Equal(ids, want) {
		t.Errorf("reopened: %v", ids)
	}
	m := openStore(t, "memory")
	if _, err := m.Load(ctx, bytes.NewReader(dump.Bytes()), LoadRefuse, 0, nil); err != nil {
		t.Fatal(err)
	}
	if ids, _ := geoIDs(t, m, "c", q); !slices.Equal(ids, want) {
		t.Errorf("loaded: %v", ids)
	}
	// Replacing the collection drops its index first (and loads it anew).
	if _, err := m.Load(ctx, bytes.NewReader(dump.Bytes()), LoadReplace, 0, nil); err != nil {
		t.Fatal(err)
	}
	if ids, _ := geoIDs(t, m, "c", q); !slices.Equal(ids, want) {
		t.Errorf("replaced: %v", ids)
	}
	if err := s2.Verify(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestGeoVerify: Verify finds an index entry that no document gives.
func TestGeoVerify(t *testing.T) {
	s := openStore(t, "memory")
	ctx := context.Background()
	fillCities(t, s, "c")
	k, v := geoEntry(LatLon{1, 1}, AppendKey(nil, Text("paris")))
	if err := s.db.Update(func(tx kv.Tx) error { return tx.Bucket(geoBucket("c", "loc")).Put(k, v) }); err != nil {
		t.Fatal(err)
	}
	if err := s.Verify(ctx); err == nil {
		t.Fatal("Verify missed a stray geo entry")
	}
	if err := s.db.Update(func(tx kv.Tx) error { return tx.Bucket(geoBucket("c", "loc")).Delete(k) }); err != nil {
		t.Fatal(err)
	}
}
