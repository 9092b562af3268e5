package docstore

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// lit converts a Go literal to a Value: nil, bool, int (an int), int64,
// float64 (a float), string (text), []byte, []float32 (a vector), []any
// (an array), or a Value as is.
func lit(x any) Value {
	switch x := x.(type) {
	case nil:
		return Null()
	case Value:
		return x
	case bool:
		return Bool(x)
	case int:
		return Int(int64(x))
	case int64:
		return Int(x)
	case float64:
		return Float(x)
	case string:
		return Text(x)
	case []byte:
		return Bytes(x)
	case []float32:
		return Vector(x)
	case []any:
		items := make([]Value, len(x))
		for i, e := range x {
			items[i] = lit(e)
		}
		return Array(items...)
	}
	panic(fmt.Sprintf("lit: unsupported %T", x))
}

// obj returns a map from alternating keys and literals (see lit).
func obj(kv ...any) Value {
	fields := make([]Field, 0, len(kv)/2)
	for i := 0; i < len(kv); i += 2 {
		fields = append(fields, Field{Key: kv[i].(string), Value: lit(kv[i+1])})
	}
	return Map(fields...)
}

// arr returns an array of literals (see lit).
func arr(xs ...any) Value { return lit(xs) }

// show formats v for a test message: JSON-like, with floats marked by a
// decimal point or exponent, bytes as b"...", vectors as vec[...].
func show(v Value) string {
	switch v.Kind() {
	case KindNull:
		return "null"
	case KindBool:
		b, _ := v.Bool()
		return strconv.FormatBool(b)
	case KindInt:
		i, _ := v.Int()
		return strconv.FormatInt(i, 10)
	case KindFloat:
		f, _ := v.Float()
		s := strconv.FormatFloat(f, 'g', -1, 64)
		if !strings.ContainsAny(s, ".eIN") {
			s += ".0"
		}
		return s
	case KindText:
		s, _ := v.Text()
		return strconv.Quote(s)
	case KindBytes:
		b, _ := v.Bytes()
		return "b" + strconv.Quote(string(b))
	case KindVector:
		vec, _ := v.Vector()
		return fmt.Sprintf("vec%v", vec)
	case KindArray:
		items, _ := v.Array()
		parts := make([]string, len(items))
		for i, x := range items {
			parts[i] = show(x)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	}
	fields, _ := v.Fields()
	parts := make([]string, len(fields))
	for i, f := range fields {
		parts[i] = strconv.Quote(f.Key) + ": " + show(f.Value)
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

// showConstraints formats constraints for a test message.
func showConstraints(cs map[string]Constraint) string {
	var b strings.Builder
	for _, path := range slices.Sorted(maps.Keys(cs)) {
		c := cs[path]
		fmt.Fprintf(&b, "%s:", path)
		if c.Eq != nil {
			fmt.Fprintf(&b, " eq=%s", show(*c.Eq))
		}
		if c.In != nil {
			fmt.Fprintf(&b, " in=%s", show(Array(c.In...)))
		}
		if c.Lower != nil {
			fmt.Fprintf(&b, " lower=%s(inclusive %v)", show(c.Lower.Value), c.Lower.Inclusive)
		}
		if c.Upper != nil {
			fmt.Fprintf(&b, " upper=%s(inclusive %v)", show(c.Upper.Value), c.Upper.Inclusive)
		}
		b.WriteString("; ")
	}
	return b.String()
}

// mustParse parses filter v or fails the test.
func mustParse(t testing.TB, v Value) *Filter {
	t.Helper()
	f, err := ParseFilter(v)
	if err != nil {
		t.Fatalf("ParseFilter: %v", err)
	}
	return f
}

var (
	nan      = math.NaN()
	bigInt   = int64(1)<<53 + 1 // not a float64
	testDocV = obj(
		"name", "ann", "age", 30, "score", 2.5, "big", bigInt,
		"tags", arr("x", "y", 1), "nested", obj("a", obj("b", 7)), "nul", nil,
		"text", "hello world", "flag", true, "raw", []byte("ab"),
		"vec", []float32{1, 2}, "nan", nan, "m", obj("p", 1, "q", 2),
	)
)

func TestFilterMatch(t *testing.T) {
	t.Parallel()
	doc := testDocV
	cases := []struct {
		name   string
		filter Value
		doc    Value // testDocV when null
		want   bool
	}{
		{"null filter", Null(), doc, true},
		{"empty filter", obj(), doc, true},
		{"empty filter, non-map doc", obj(), Int(1), true},

		// Plain equality and typed comparison.
		{"eq text", obj("name", "ann"), doc, true},
		{"eq text other", obj("name", "bob"), doc, false},
		{"int equals float", obj("age", 30.0), doc, true},
		{"float equals int", obj("nested.a.b", 7.0), doc, true},
		{"text never equals number", obj("age", "30"), doc, false},
		{"number never equals text", obj("name", 1), doc, false},
		{"eq float", obj("score", 2.5), doc, true},
		{"int beyond 2^53 exact", obj("big", float64(bigInt-1)), doc, false},
		{"int beyond 2^53 itself", obj("big", bigInt), doc, true},
		{"bool never equals number", obj("flag", 1), doc, false},
		{"eq bool", obj("flag", true), doc, true},
		{"nested path", obj("nested.a.b", 7), doc, true},
		{"nested map equality", obj("nested.a", obj("b", 7)), doc, true},
		{"map equality in any order", obj("m", obj("q", 2, "p", 1)), doc, true},
		{"map equality needs every field", obj("m", obj("p", 1)), doc, false},
		{"no implicit array traversal", obj("tags", "x"), doc, false},
		{"array equality", obj("tags", arr("x", "y", 1)), doc, true},
		{"array equality is Equal (no int/float)", obj("tags", arr("x", "y", 1.0)), doc, false},
		{"array equality order", obj("tags", arr("y", "x", 1)), doc, false},
		{"vector equality", obj("vec", []float32{1, 2}), doc, true},
		{"vector is not an array", obj("vec", arr(1.0, 2.0)), doc, false},
		{"bytes equality", obj("raw", []byte("ab")), doc, true},
		{"bytes never equal text", obj("raw", "ab"), doc, false},
		{"NaN equals NaN", obj("nan", nan), doc, true},
		{"NaN is not a number's equal", obj("nan", 0.0), doc, false},
		{"several fields AND", obj("age", 30, "name", "bob"), doc, false},
		{"several fields all hold", obj("age", 30, "name", "ann"), doc, true},
		{"path through a non-map is missing", obj("name.x", obj("$exists", false)), doc, true},
		{"non-map doc has no fields", obj("a", 1), Int(1), false},
		{"non-map doc: eq null", obj("a", nil), Null(), true},
		{"zero and negative zero", obj("z", 0), obj("z", math.Copysign(0, -1)), true},

		// $eq and $ne with null and missing fields.
		{"eq null explicit", obj("nul", nil), doc, true},
		{"eq null missing", obj("missing", nil), doc, true},
		{"eq null present", obj("name", nil), doc, false},
		{"$eq operator", obj("age", obj("$eq", 30)), doc, true},
		{"$eq missing", obj("missing", obj("$eq", 30)), doc, false},
		{"$ne other", obj("name", obj("$ne", "bob")), doc, true},
		{"$ne same number other kind", obj("age", obj("$ne", 30.0)), doc, false},
		{"$ne missing", obj("missing", obj("$ne", 1)), doc, true},
		{"$ne null missing", obj("missing", obj("$ne", nil)), doc, false},
		{"$ne null explicit", obj("nul", obj("$ne", nil)), doc, false},
		{"$ne null present", obj("age", obj("$ne", nil)), doc, true},
		{"$ne NaN", obj("nan", obj("$ne", nan)), doc, false},

		// Ranges.
		{"$gt below", obj("age", obj("$gt", 29)), doc, true},
		{"$gt equal", obj("age", obj("$gt", 30)), doc, false},
		{"$gt equal float", obj("age", obj("$gt", 30.0)), doc, false},
		{"$gte equal", obj("age", obj("$gte", 30)), doc, true},
		{"$gte equal float", obj("age", obj("$gte", 30.0)), doc, true},
		{"$gte above", obj("age", obj("$gte", 30.5)), doc, false},
		{"$lt", obj("age", obj("$lt", 30.5)), doc, true},
		{"$lt equal", obj("age", obj("$lt", 30)), doc, false},
		{"$lte equal float", obj("age", obj("$lte", 30.0)), doc, true},
		{"$lte below", obj("age", obj("$lte", 29)), doc, false},
		{"range and", obj("age", obj("$gt", 18, "$lt", 65)), doc, true},
		{"range and fails", obj("age", obj("$gt", 18, "$lt", 20)), doc, false},
		{"range exact beyond 2^53", obj("big", obj("$gt", float64(bigInt-1))), doc, true},
		{"range float vs int", obj("score", obj("$gt", 2, "$lt", 3)), doc, true},
		{"range infinity", obj("age", obj("$lt", math.Inf(1))), doc, true},
		{"range number vs text operand", obj("age", obj("$gt", "a")), doc, false},
		{"range number vs text operand, lt", obj("age", obj("$lt", "a")), doc, false},
		{"range text", obj("name", obj("$gt", "am", "$lt", "b")), doc, true},
		{"range text vs number operand", obj("name", obj("$gt", 1)), doc, false},
		{"range text vs number operand, lt", obj("name", obj("$lt", 1)), doc, false},
		{"range text bytewise", obj("name", obj("$lt", "B")), doc, false},
		{"range bool", obj("flag", obj("$gt", false)), doc, true},
		{"range bool vs number", obj("flag", obj("$gt", 0)), doc, false},
		{"range bytes", obj("raw", obj("$gte", []byte("ab"), "$lt", []byte("b"))), doc, true},
		{"range bytes vs text", obj("raw", obj("$gte", "a")), doc, false},
		{"range on array field", obj("tags", obj("$gt", "a")), doc, false},
		{"range on map field", obj("m", obj("$gt", 0)), doc, false},
		{"range missing", obj("missing", obj("$lt", 100)), doc, false},
		{"range null", obj("nul", obj("$lt", 100)), doc, false},
		{"range NaN field gt", obj("nan", obj("$gt", 0)), doc, false},
		{"range NaN field lt", obj("nan", obj("$lt", 0)), doc, false},
		{"range NaN field lte inf", obj("nan", obj("$lte", math.Inf(1))), doc, false},

		// $in and $nin.
		{"$in numbers", obj("age", obj("$in", arr(1, 30.0))), doc, true},
		{"$in text vs number", obj("age", obj("$in", arr("30"))), doc, false},
		{"$in empty", obj("age", obj("$in", arr())), doc, false},
		{"$in null missing", obj("missing", obj("$in", arr(nil))), doc, true},
		{"$in missing", obj("missing", obj("$in", arr(1))), doc, false},
		{"$in array value", obj("tags", obj("$in", arr(arr("x", "y", 1)))), doc, true},
		{"$in no traversal", obj("tags", obj("$in", arr("x"))), doc, false},
		{"$nin", obj("age", obj("$nin", arr(1, 2))), doc, true},
		{"$nin holds", obj("age", obj("$nin", arr(30.0))), doc, false},
		{"$nin missing", obj("missing", obj("$nin", arr(1))), doc, true},
		{"$nin null missing", obj("missing", obj("$nin", arr(nil))), doc, false},
		{"$nin empty", obj("age", obj("$nin", arr())), doc, true},

		// $exists.
		{"$exists null", obj("nul", obj("$exists", true)), doc, true},
		{"$exists false null", obj("nul", obj("$exists", false)), doc, false},
		{"$exists false missing", obj("missing", obj("$exists", false)), doc, true},
		{"$exists missing", obj("missing", obj("$exists", true)), doc, false},
		{"$exists nested", obj("nested.a.b", obj("$exists", true)), doc, true},
		{"$exists false nested", obj("nested.a.c", obj("$exists", false)), doc, true},

		// $contains.
		{"$contains element", obj("tags", obj("$contains", "x")), doc, true},
		{"$contains number numerically", obj("tags", obj("$contains", 1.0)), doc, true},
		{"$contains absent element", obj("tags", obj("$contains", "z")), doc, false},
		{"$contains text never number", obj("tags", obj("$contains", "1")), doc, false},
		{"$contains substring", obj("text", obj("$contains", "lo wo")), doc, true},
		{"$contains no substring", obj("text", obj("$contains", "bye")), doc, false},
		{"$contains empty substring", obj("text", obj("$contains", "")), doc, true},
		{"$contains number in text", obj("text", obj("$contains", 1)), doc, false},
		{"$contains missing", obj("missing", obj("$contains", nil)), doc, false},
		{"$contains null element", obj("l", obj("$contains", nil)), obj("l", arr(1, nil)), true},
		{"$contains array element", obj("l", obj("$contains", arr(1))), obj("l", arr(arr(1), 2)), true},
		{"$contains vector", obj("vec", obj("$contains", 1)), doc, false},
		{"$contains map", obj("nested", obj("$contains", "a")), doc, false},
		{"$contains bytes", obj("raw", obj("$contains", "a")), doc, false},

		// Field $not.
		{"field $not", obj("age", obj("$not", obj("$gt", 40))), doc, true},
		{"field $not fails", obj("age", obj("$not", obj("$gt", 5))), doc, false},
		{"field $not missing", obj("missing", obj("$not", obj("$gt", 5))), doc, true},
		{"field $not of AND", obj("age", obj("$not", obj("$gt", 5, "$lt", 10))), doc, true},
		{"field $not of $not", obj("age", obj("$not", obj("$not", obj("$eq", 30)))), doc, true},
		{"field $not beside", obj("age", obj("$gt", 5, "$not", obj("$eq", 30))), doc, false},

		// Top-level $and, $or, $not.
		{"$and", obj("$and", arr(obj("age", 30), obj("name", "ann"))), doc, true},
		{"$and one false", obj("$and", arr(obj("age", 30), obj("name", "bob"))), doc, false},
		{"$or", obj("$or", arr(obj("age", 1), obj("name", "ann"))), doc, true},
		{"$or none", obj("$or", arr(obj("age", 1), obj("name", "bob"))), doc, false},
		{"$not", obj("$not", obj("name", "ann")), doc, false},
		{"$not false", obj("$not", obj("name", "bob")), doc, true},
		{"$not of everything", obj("$not", obj()), doc, false},
		{"$or inside $and", obj("$and", arr(obj("$or", arr(obj("age", 1), obj("age", 30))), obj("flag", true))), doc, true},
		{"$or beside a field", obj("$or", arr(obj("age", 1), obj("age", 30)), "flag", false), doc, false},
		{"$and of empty filters", obj("$and", arr(obj(), obj())), doc, true},
	}
	for _, c := range cases {
		f := mustParse(t, c.filter)
		if got := f.Match(c.doc); got != c.want {
			t.Errorf("%s: Match = %v, want %v", c.name, got, c.want)
		}
	}
}

// TestFilterFromJSON checks filters as agents send them: JSON read by
// FromJSON, whose $vector and $bytes wrappers arrive as values.
func TestFilterFromJSON(t *testing.T) {
	t.Parallel()
	doc := j(t, `{"v": {"$vector": [1, 2]}, "b": {"$bytes": "YWI="}, "n": 1.0, "m": {"$map": {"$x": 1}}}`)
	for _, c := range []struct {
		filter string
		want   bool
	}{
		{`{"v": {"$vector": [1, 2]}}`, true},
		{`{"v": {"$eq": {"$vector": [1, 2.5]}}}`, false},
		{`{"v": [1, 2]}`, false},
		{`{"b": {"$bytes": "YWI="}, "n": 1}`, true},
		{`{"b": {"$in": [{"$bytes": "YQ=="}, {"$bytes": "YWI="}]}}`, true},
		{`{"n": {"$gte": 1, "$lt": 1.5}}`, true},
	} {
		if got := mustParse(t, j(t, c.filter)).Match(doc); got != c.want {
			t.Errorf("%s: Match = %v, want %v", c.filter, got, c.want)
		}
	}
	for _, c := range []struct{ filter, path, op string }{
		{`{"v": {"$eq": {"$vector": "x"}}}`, "/v/$eq/$vector", "$vector"},
		{`{"v": {"$vector": [1, "x"]}}`, "/v/$vector", "$vector"},
		{`{"m": {"$map": {"$x": 1}}}`, "/m/$x", "$x"},
		{`{"m.$x": 1}`, "/m.$x", ""},
	} {
		_, err := ParseFilter(j(t, c.filter))
		var fe *FilterError
		if !errors.As(err, &fe) || fe.Path != c.path || fe.Op != c.op {
			t.Errorf("%s: err = %v, want a FilterError at %q (%s)", c.filter, err, c.path, c.op)
		}
	}
}

// nestArrays returns v wrapped in n arrays.
func nestArrays(v Value, n int) Value {
	for range n {
		v = Array(v)
	}
	return v
}

// nestNots returns filter f wrapped in n top-level $not.
func nestNots(f Value, n int) Value {
	for range n {
		f = obj("$not", f)
	}
	return f
}

// nots returns the JSON Pointer of n nested top-level $not.
func nots(n int) string { return strings.Repeat("/$not", n) }

func TestFilterErrors(t *testing.T) {
	t.Parallel()
	deepPath := "/a" + strings.Repeat("/0", MaxFilterDepth-1)
	cases := []struct {
		name         string
		filter       Value
		path, op     string
		reasonSubstr string
	}{
		{"not a map", Int(1), "", "", "a filter must be a map, not int"},
		{"unknown top-level operator", obj("$bogus", 1), "/$bogus", "$bogus", "unknown top-level operator"},
		{"field operator at top level", obj("$eq", 1), "/$eq", "$eq", "is a field operator and needs a field"},
		{"unknown field operator", obj("a", obj("$bogus", 1)), "/a/$bogus", "$bogus", "unknown operator"},
		{"unknown operator in $or", obj("$or", arr(obj("a", 1), obj("age", obj("$gt", 1, "$regex", "x")))), "/$or/1/age/$regex", "$regex", "unknown operator"},
		{"range operand array", obj("$or", arr(obj("a", 1), obj("age", obj("$gt", arr())))), "/$or/1/age/$gt", "$gt", "takes a bool, number, text or bytes, not array"},
		{"range operand null", obj("a", obj("$lte", nil)), "/a/$lte", "$lte", "not null"},
		{"range operand map", obj("a", obj("$lt", obj())), "/a/$lt", "$lt", "not map"},
		{"range operand vector", obj("a", obj("$gte", []float32{1})), "/a/$gte", "$gte", "not vector"},
		{"range operand NaN", obj("a", obj("$gt", nan)), "/a/$gt", "$gt", "NaN"},
		{"$in not an array", obj("a", obj("$in", 1)), "/a/$in", "$in", "takes an array, not int"},
		{"$nin not an array", obj("a", obj("$nin", "x")), "/a/$nin", "$nin", "takes an array, not text"},
		{"$exists not a bool", obj("a", obj("$exists", 1)), "/a/$exists", "$exists", "takes a bool, not int"},
		{"$and empty", obj("$and", arr()), "/$and", "$and", "non-empty array"},
		{"$or empty", obj("b", 1, "$or", arr()), "/$or", "$or", "non-empty array"},
		{"$or not an array", obj("$or", obj("a", 1)), "/$or", "$or", "takes an array of filters, not map"},
		{"$and of a non-map", obj("$and", arr(obj("a", 1), 1)), "/$and/1", "", "a filter must be a map, not int"},
		{"$and of null", obj("$and", arr(nil)), "/$and/0", "", "a filter must be a map, not null"},
		{"top-level $not of a non-map", obj("$not", 1), "/$not", "", "a filter must be a map, not int"},
		{"empty field name", obj("", 1), "/", "", "empty field name"},
		{"empty path segment", obj("a..b", 1), "/a..b", "", `field path "a..b" has an empty segment`},
		{"trailing dot", obj("a.", 1), "/a.", "", "empty segment"},
		{"segment starting with $", obj("a.$b", 1), "/a.$b", "", `a segment starting with "$"`},
		{"field in an operator map", obj("a", obj("$gt", 1, "b", 2)), "/a/b", "", "operators and field names cannot mix"},
		{"field before an operator", obj("a", obj("b", 2, "$gt", 1)), "/a/b", "", "operators and field names cannot mix"},
		{"$and on a field", obj("a", obj("$and", arr())), "/a/$and", "$and", "top-level operator"},
		{"$or on a field", obj("a", obj("$or", arr(obj("a", 1)))), "/a/$or", "$or", "top-level operator"},
		{"field $not of a value", obj("a", obj("$not", 5)), "/a/$not", "$not", "takes an operator map"},
		{"field $not of an empty map", obj("a", obj("$not", obj())), "/a/$not", "$not", "not an empty map"},
		{"field $not of a map of fields", obj("a", obj("$not", obj("b", 1))), "/a/$not", "$not", "not a map of field names"},
		{"field $not with a field", obj("a", obj("$not", obj("$gt", 1, "b", 1))), "/a/$not/b", "", "cannot mix"},
		{"malformed $vector", obj("a", obj("$vector", "x")), "/a/$vector", "$vector", "malformed $vector wrapper"},
		{"malformed $bytes", obj("a", obj("$bytes", 1)), "/a/$bytes", "$bytes", "malformed $bytes wrapper"},
		{"malformed $map", obj("a", obj("$map", 1)), "/a/$map", "$map", "malformed $map wrapper"},
		{"operator as $eq operand", obj("a", obj("$eq", obj("$gt", 1))), "/a/$eq/$gt", "$gt", "where a value is expected"},
		{"operator as $ne operand", obj("a", obj("$ne", obj("x", obj("$gt", 1)))), "/a/$ne/x/$gt", "$gt", "where a value is expected"},
		{"operator as $contains operand", obj("a", obj("$contains", obj("$vector", 1))), "/a/$contains/$vector", "$vector", "where a value is expected"},
		{"operator in an array value", obj("a", arr(1, obj("$x", 1))), "/a/1/$x", "$x", "where a value is expected"},
		{"operator in $in", obj("a", obj("$in", arr(1, obj("b", obj("$c", 1))))), "/a/$in/1/b/$c", "$c", "where a value is expected"},
		{"pointer escaping", obj("a/b~c", obj("$bogus", 1)), "/a~1b~0c/$bogus", "$bogus", "unknown operator"},
		{"value nesting too deep", obj("a", nestArrays(Int(1), MaxFilterDepth)), deepPath, "", "nesting deeper than 64"},
		{"$not nesting too deep", nestNots(obj(), MaxFilterDepth), nots(MaxFilterDepth), "", "nesting deeper than 64"},
		{"operator map too deep", nestNots(obj("a", obj("$gt", 1)), MaxFilterDepth-1), nots(MaxFilterDepth-1) + "/a", "", "nesting deeper than 64"},
		{"$in too deep", nestNots(obj("a", obj("$in", arr())), MaxFilterDepth-2), nots(MaxFilterDepth-2) + "/a/$in", "$in", "nesting deeper than 64"},
		{"$and too deep", nestNots(obj("$and", arr(obj())), MaxFilterDepth-1), nots(MaxFilterDepth-1) + "/$and", "$and", "nesting deeper than 64"},
	}
	for _, c := range cases {
		_, err := ParseFilter(c.filter)
		var fe *FilterError
		if !errors.As(err, &fe) {
			t.Errorf("%s: err = %v, want a *FilterError", c.name, err)
			continue
		}
		if fe.Path != c.path || fe.Op != c.op || !strings.Contains(fe.Reason, c.reasonSubstr) {
			t.Errorf("%s: got path %q op %q reason %q; want path %q op %q reason containing %q",
				c.name, fe.Path, fe.Op, fe.Reason, c.path, c.op, c.reasonSubstr)
		}
	}
}

func TestFilterDepthLimit(t *testing.T) {
	t.Parallel()
	// The deepest accepted filters, one level short of each error above.
	for _, v := range []Value{
		obj("a", nestArrays(Int(1), MaxFilterDepth-1)),
		nestNots(obj(), MaxFilterDepth-1),
		nestNots(obj("a", obj("$gt", 1)), MaxFilterDepth-2),
		nestNots(obj("a", obj("$in", arr())), MaxFilterDepth-3),
		nestNots(obj("$and", arr(obj())), MaxFilterDepth-3), // its filter at 64
	} {
		mustParse(t, v)
	}
	f := mustParse(t, nestNots(obj("a", 1), MaxFilterDepth-2)) // an even number of $not
	if !f.Match(obj("a", 1)) || f.Match(obj("a", 2)) {
		t.Error("deeply nested $not does not match as its innermost filter")
	}
}

func TestFilterErrorMessage(t *testing.T) {
	t.Parallel()
	_, err := ParseFilter(obj("$or", arr(obj("a", 1), obj("age", obj("$gt", arr())))))
	const want = `invalid filter at "/$or/1/age/$gt" ($gt): takes a bool, number, text or bytes, not array`
	if err == nil || err.Error() != want {
		t.Errorf("err = %v, want %s", err, want)
	}
	_, err = ParseFilter(Text("x"))
	if want := "invalid filter: a filter must be a map, not text"; err == nil || err.Error() != want {
		t.Errorf("err = %v, want %s", err, want)
	}
	var fe *FilterError
	if !errors.As(fmt.Errorf("count: %w", err), &fe) {
		t.Error("a wrapped FilterError is not found by errors.As")
	}
}

func TestFilterFields(t *testing.T) {
	t.Parallel()
	f := mustParse(t, obj(
		"z", 1, "a.b", obj("$gt", 1, "$not", obj("$lt", 5)),
		"$or", arr(obj("m", 1), obj("z", 2)),
		"$not", obj("$and", arr(obj("c", nil))),
	))
	want := []string{"a.b", "c", "m", "z"}
	got := f.Fields()
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Fields = %q, want %q", got, want)
	}
	got[0] = "changed"
	if g := f.Fields(); !reflect.DeepEqual(g, want) {
		t.Errorf("Fields after changing a returned slice = %q, want %q", g, want)
	}
	if g := mustParse(t, Null()).Fields(); len(g) != 0 {
		t.Errorf("Fields of the empty filter = %q, want none", g)
	}
}

// ptr returns a pointer to v.
func ptr(v Value) *Value { return &v }

func TestFilterConjuncts(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		filter Value
		want   map[string]Constraint
	}{
		{"empty", obj(), map[string]Constraint{}},
		{"equality", obj("a", 1), map[string]Constraint{"a": {Eq: ptr(Int(1))}}},
		{"array equality", obj("t", arr(1, 2)), map[string]Constraint{"t": {Eq: ptr(arr(1, 2))}}},
		{"equality to null is left out", obj("a", nil, "b", obj("$eq", nil)), map[string]Constraint{}},
		{"operator map", obj("a", obj("$eq", 1, "$gt", 0, "$lte", 5)), map[string]Constraint{
			"a": {Eq: ptr(Int(1)), Lower: &Bound{Value: Int(0)}, Upper: &Bound{Value: Int(5), Inclusive: true}},
		}},
		{"tightest bounds, exclusive on a tie", obj(
			"a", obj("$gt", 1, "$gte", 3),
			"$and", arr(obj("a", obj("$gt", 3)), obj("a", obj("$lt", 10)), obj("a", obj("$lte", 10.0)), obj("a", obj("$lte", 12))),
		), map[string]Constraint{"a": {Lower: &Bound{Value: Int(3)}, Upper: &Bound{Value: Int(10)}}}},
		{"tie across int and float", obj("a", obj("$gte", 1.0, "$gt", 1)), map[string]Constraint{
			"a": {Lower: &Bound{Value: Int(1)}},
		}},
		{"inclusive does not loosen", obj("a", obj("$gt", 1, "$gte", 1.0)), map[string]Constraint{
			"a": {Lower: &Bound{Value: Int(1)}},
		}},
		{"higher float", obj("a", obj("$gte", 2, "$gte", 2.5)), map[string]Constraint{
			"a": {Lower: &Bound{Value: Float(2.5), Inclusive: true}},
		}},
		{"lower upper", obj("a", obj("$lte", 2.5, "$lt", 2)), map[string]Constraint{
			"a": {Upper: &Bound{Value: Int(2)}},
		}},
		{"bounds of different families keep the first", obj("a", obj("$gt", 5, "$gte", "x", "$lt", "y", "$lte", 9)), map[string]Constraint{
			"a": {Lower: &Bound{Value: Int(5)}, Upper: &Bound{Value: Text("y")}},
		}},
		{"$in", obj("a", obj("$in", arr(1, "x"))), map[string]Constraint{"a": {In: []Value{Int(1), Text("x")}}}},
		{"$in intersected", obj("a", obj("$in", arr(1, 2, 3)), "$and", arr(obj("a", obj("$in", arr(2.0, 3, 4))))), map[string]Constraint{
			"a": {In: []Value{Int(2), Int(3)}},
		}},
		{"$in disjoint", obj("a", obj("$in", arr(1)), "$and", arr(obj("a", obj("$in", arr(2))))), map[string]Constraint{
			"a": {In: []Value{}},
		}},
		{"$in empty", obj("a", obj("$in", arr())), map[string]Constraint{"a": {In: []Value{}}}},
		{"$in with null is left out", obj("a", obj("$in", arr(1, nil))), map[string]Constraint{}},
		{"eq then $in", obj("a", 1, "$and", arr(obj("a", obj("$in", arr(1, 2))))), map[string]Constraint{"a": {Eq: ptr(Int(1))}}},
		{"$in then eq", obj("$and", arr(obj("a", obj("$in", arr(1, 2))), obj("a", 2))), map[string]Constraint{"a": {Eq: ptr(Int(2))}}},
		{"two equalities keep the first", obj("a", 1, "$and", arr(obj("a", 2))), map[string]Constraint{"a": {Eq: ptr(Int(1))}}},
		{"nested $and and paths", obj("$and", arr(obj("$and", arr(obj("a.b", "x"))), obj("c", obj("$lt", 1)))), map[string]Constraint{
			"a.b": {Eq: ptr(Text("x"))}, "c": {Upper: &Bound{Value: Int(1)}},
		}},
		{"what is left out", obj(
			"$or", arr(obj("a", 1)), "$not", obj("b", 1),
			"c", obj("$ne", 1, "$nin", arr(1), "$exists", true, "$contains", 1, "$not", obj("$gt", 1)),
		), map[string]Constraint{}},
		{"a lone $or is left out", obj("$or", arr(obj("a", 1), obj("a", 2))), map[string]Constraint{}},
	}
	for _, c := range cases {
		f := mustParse(t, c.filter)
		if got := f.Conjuncts(); !sameConstraints(got, c.want) {
			t.Errorf("%s: Conjuncts = %s, want %s", c.name, showConstraints(got), showConstraints(c.want))
		}
	}
}

// sameConstraints reports whether a and b constrain the same paths with
// Equal values (a Value holds a pointer to its contents, so DeepEqual would
// compare addresses).
func sameConstraints(a, b map[string]Constraint) bool {
	sameValue := func(x, y *Value) bool { return (x == nil) == (y == nil) && (x == nil || Equal(*x, *y)) }
	sameBound := func(x, y *Bound) bool {
		return (x == nil) == (y == nil) && (x == nil || (x.Inclusive == y.Inclusive && Equal(x.Value, y.Value)))
	}
	if len(a) != len(b) {
		return false
	}
	for k, x := range a {
		y, ok := b[k]
		if !ok || !sameValue(x.Eq, y.Eq) || (x.In == nil) != (y.In == nil) || !slices.EqualFunc(x.In, y.In, Equal) ||
			!sameBound(x.Lower, y.Lower) || !sameBound(x.Upper, y.Upper) {
			return false
		}
	}
	return true
}

func TestFilterConjunctsAreFresh(t *testing.T) {
	t.Parallel()
	f := mustParse(t, obj("a", obj("$in", arr(1, 2)), "b", 1))
	got := f.Conjuncts()
	got["a"].In[0] = Int(9)
	delete(got, "b")
	want := map[string]Constraint{"a": {In: []Value{Int(1), Int(2)}}, "b": {Eq: ptr(Int(1))}}
	if again := f.Conjuncts(); !sameConstraints(again, want) {
		t.Errorf("Conjuncts after changing a returned map = %s, want %s", showConstraints(again), showConstraints(want))
	}
}

func TestFilterConcurrentMatch(t *testing.T) {
	t.Parallel()
	f := mustParse(t, obj("$or", arr(obj("age", obj("$gte", 18)), obj("tags", obj("$contains", "x")))))
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 1000 {
				if !f.Match(testDocV) {
					t.Error("Match = false")
					return
				}
				_ = f.Conjuncts()
			}
		})
	}
	wg.Wait()
}

// benchDoc is a 10-field document.
var benchDoc = obj(
	"id", "doc-0042", "title", "Filters in Go", "status", "open", "age", 42, "score", 0.87,
	"tags", arr("db", "go", "search"), "author", obj("name", "ann", "org", "x"), "draft", false,
	"views", 1234, "updated", "2026-05-01",
)

// benchMatchByHand is what the benchmark's filter means, written in Go:
// the peer a filter is measured against.
func benchMatchByHand(doc Value) bool {
	age, ok := doc.Get("age")
	if n, isNum := age.Number(); !ok || !isNum || n < 18 || n >= 65 {
		return false
	}
	if s, _ := doc.Get("status"); !Equal(s, Text("open")) {
		return false
	}
	tags, _ := doc.Get("tags")
	items, _ := tags.Array()
	for _, x := range items {
		if Equal(x, Text("go")) {
			return true
		}
	}
	return false
}

// benchSink keeps the benchmarks' results alive.
var benchSink bool

// BenchmarkFilterMatch measures Match of a 3-condition filter on a
// 10-field document, and reports its time against benchMatchByHand's as
// x-by-hand.
func BenchmarkFilterMatch(b *testing.B) {
	f := mustParse(b, obj("age", obj("$gte", 18, "$lt", 65), "status", "open", "tags", obj("$contains", "go")))
	if !f.Match(benchDoc) || !benchMatchByHand(benchDoc) {
		b.Fatal("the benchmark filter does not match")
	}
	b.ReportAllocs()
	for b.Loop() {
		benchSink = f.Match(benchDoc)
	}
	start := time.Now()
	for range b.N {
		benchSink = benchMatchByHand(benchDoc)
	}
	b.ReportMetric(float64(b.Elapsed())/float64(time.Since(start)), "x-by-hand")
}

// BenchmarkParseFilter measures parsing the benchmark's filter.
func BenchmarkParseFilter(b *testing.B) {
	v := obj("age", obj("$gte", 18, "$lt", 65), "status", "open", "tags", obj("$contains", "go"))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseFilter(v); err != nil {
			b.Fatal(err)
		}
	}
}
