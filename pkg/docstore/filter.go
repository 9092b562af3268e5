package docstore

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// MaxFilterDepth is how deep maps and arrays may nest in a filter (the
// filter map itself is at depth 1, {"a": {"$in": [..]}} reaches 3).
const MaxFilterDepth = 64

// FilterError is a filter [ParseFilter] refuses.
type FilterError struct {
	// Path is the JSON Pointer (RFC 6901) of the fault within the filter,
	// e.g. "/$or/1/age/$gt"; "" is the filter itself.
	Path string
	// Op is the operator at fault, or "" when the fault is a field name or
	// the filter's shape.
	Op string
	// Reason says what is wrong.
	Reason string
}

func (e *FilterError) Error() string {
	var b strings.Builder
	b.WriteString("invalid filter")
	if e.Path != "" {
		fmt.Fprintf(&b, " at %q", e.Path)
	}
	if e.Op != "" {
		fmt.Fprintf(&b, " (%s)", e.Op)
	}
	b.WriteString(": ")
	b.WriteString(e.Reason)
	return b.String()
}

// Filter is a parsed filter: a MongoDB/Chroma-style condition on
// documents, given as a map [Value] (what FromJSON makes of the JSON an
// agent sends):
//
//	{"status": "open"}                           equality
//	{"age": {"$gte": 18, "$lt": 65}}             every operator of a field holds (AND)
//	{"a.b": 1, "tags": {"$contains": "x"}}       several fields AND; dotted paths reach into nested maps
//	{"$or": [{"a": 1}, {"b": {"$exists": false}}]}
//	{"$not": {"a": 1}}                           {"age": {"$not": {"$gt": 5}}}
//
// Field operators: $eq $ne $gt $gte $lt $lte $in $nin $exists $contains
// $not; top-level operators: $and and $or (non-empty arrays of filters) and
// $not (a filter). The comparison is typed:
//
//   - Numbers compare numerically and exactly: Int(1) equals Float(1.0),
//     and an int beyond 2^53 is not rounded against a float. NaN equals
//     NaN (as [Equal] has it) and orders against nothing.
//   - Text never equals or orders against a number, bool only against
//     bool, bytes only against bytes; a range operator ($gt $gte $lt $lte)
//     between values of different families (null, bool, number, text,
//     bytes, vector, array, map) is false, not an error. Text and bytes
//     order bytewise, false before true.
//   - $eq on arrays, vectors and maps is [Equal] (maps in any field order;
//     numbers inside them are not compared across int and float). There is
//     no implicit array traversal: {"tags": "x"} does not match
//     {"tags": ["x"]}; use $contains.
//   - $contains holds when the field is an array with an element equal (as
//     $eq compares) to the operand, or text containing the operand text as
//     a substring. On any other field it is false.
//   - A missing field: $eq null matches a missing field or an explicit null;
//     $ne x and $nin are the negations of $eq x and $in, so they match a
//     missing field unless x is (or the list holds) null; $in with null
//     matches a missing field; range operators and $contains never match a
//     missing field; $exists true matches a present field (null included),
//     $exists false only a missing one; $not negates, so
//     {"age": {"$not": {"$gt": 5}}} matches a missing age.
//
// ParseFilter refuses, with a [*FilterError] naming the place, an unknown
// operator, an operand of the wrong type ($in/$nin not an array, $exists
// not a bool, $and/$or not a non-empty array of maps, a range operand that
// is not a bool, number, text or bytes, or is NaN), a map with keys
// starting with "$" where a value is expected (a {"$vector": ...},
// {"$bytes": ...} or {"$map": ...} wrapper arrives converted by FromJSON;
// one still a map was malformed), an operator map mixing operators and
// field names, a field path that is empty, has an empty segment or a
// segment starting with "$", and nesting deeper than [MaxFilterDepth].
// So a filter cannot test equality with a map that has a key starting
// with "$": such a map, even one written {"$map": {...}} in JSON, reads as
// operators.
//
// A Filter is immutable and safe for concurrent use.
type Filter struct {
	root   clause
	fields []string
}

// clauseKind is what a clause tests.
type clauseKind uint8

const (
	clauseAnd clauseKind = iota
	clauseOr
	clauseNot
	clauseField
)

// clause is a node of a parsed filter.
type clause struct {
	kind clauseKind
	subs []clause // and, or: the clauses; not: the one negated
	// field: the dotted path, its segments, and the operators that must all
	// hold on the field's value.
	path string
	segs []string
	ops  []fieldOp
}

// opCode is a field operator.
type opCode uint8

const (
	opEq opCode = iota
	opNe
	opGt
	opGte
	opLt
	opLte
	opIn
	opNin
	opExists
	opContains
	opNot
)

// fieldOps names the field operators.
var fieldOps = map[string]opCode{
	"$eq": opEq, "$ne": opNe, "$gt": opGt, "$gte": opGte, "$lt": opLt, "$lte": opLte,
	"$in": opIn, "$nin": opNin, "$exists": opExists, "$contains": opContains, "$not": opNot,
}

// fieldOp is one operator applied to a field.
type fieldOp struct {
	op      opCode
	operand Value     // eq, ne, ranges, exists (a bool), contains
	set     []Value   // in, nin
	sub     []fieldOp // not: the operators negated together
}

// ParseFilter parses filter v: a map, or null (as is an empty map: a
// filter that matches every document). It returns a *FilterError for a
// filter it refuses (see [Filter] for the language and what is refused).
func ParseFilter(v Value) (*Filter, error) {
	if v.IsNull() {
		v = Map()
	}
	p := parser{fields: map[string]bool{}}
	root, err := p.filter(v, nil)
	if err != nil {
		return nil, err
	}
	fields := make([]string, 0, len(p.fields))
	for f := range p.fields {
		fields = append(fields, f)
	}
	slices.Sort(fields)
	return &Filter{root: root, fields: fields}, nil
}

// Match reports whether doc satisfies the filter. A doc that is not a map
// has no fields.
func (f *Filter) Match(doc Value) bool { return f.root.match(&doc) }

// Fields returns every field path the filter reads, under $or and $not
// too, sorted and without repeats (a new slice on every call).
func (f *Filter) Fields() []string { return slices.Clone(f.fields) }

// Constraint is what every document a filter matches satisfies on one
// field, for a query planner (see [Filter.Conjuncts]). A document
// satisfies it when the field is present and its value
//
//   - equals *Eq, when Eq is set, as $eq compares (numbers numerically:
//     Eq = Int(1) is satisfied by Float(1.0) too);
//   - equals, in the same sense, one of In, when In is not nil (an empty,
//     non-nil In is satisfied by nothing: no document matches);
//   - orders above Lower and below Upper, when set, as the range operators
//     compare: same family only (a number bound is satisfied only by
//     numbers, a text bound only by text...), NaN never.
//
// Eq is never null, and In never holds null (a null matches missing fields,
// which no constraint describes).
type Constraint struct {
	Eq           *Value
	In           []Value
	Lower, Upper *Bound
}

// Bound is one end of a range.
type Bound struct {
	Value     Value // a bool, a number (not NaN), text or bytes
	Inclusive bool  // whether values equal to Value (numerically) are in
}

// Conjuncts returns, by field path, constraints that every document the
// filter matches satisfies: the filter's top-level fields and $and
// operands (recursively), their operator maps reduced per path ($eq or
// plain non-null equality to Eq, the first when several, as each is
// necessary; $in without null to In, intersected when
// several, dropped when there is an Eq; range operators to the tightest
// Lower and Upper bound of one family). Anything under $or or $not, and
// $ne, $nin, $exists, $contains and equality to null, is left out: the
// constraints are necessary, not sufficient, so a planner must still test
// each candidate with [Filter.Match]. Paths without a constraint are
// absent. The map is new on every call.
func (f *Filter) Conjuncts() map[string]Constraint {
	out := map[string]Constraint{}
	f.root.conjoin(out)
	return out
}

// Exact reports whether Conjuncts says all the filter says: the filter is
// an AND of one equality or $in per field, on scalar operands (bool,
// number, text, bytes; no null), so that a document matches exactly when
// its values meet every Constraint. A planner can then answer from an
// index alone.
func (f *Filter) Exact() bool {
	seen := map[string]bool{}
	return f.root.exact(seen)
}

func (c *clause) exact(seen map[string]bool) bool {
	switch c.kind {
	case clauseAnd:
		for i := range c.subs {
			if !c.subs[i].exact(seen) {
				return false
			}
		}
		return true
	case clauseField:
		if len(c.ops) != 1 || seen[c.path] {
			return false
		}
		seen[c.path] = true
		switch op := c.ops[0]; op.op {
		case opEq:
			return scalarOperand(op.operand)
		case opIn:
			return len(op.set) > 0 && !slices.ContainsFunc(op.set, func(v Value) bool { return !scalarOperand(v) })
		}
	}
	return false
}

// scalarOperand reports whether v is a non-null scalar, whose equality is
// its key's.
func scalarOperand(v Value) bool {
	switch v.Kind() {
	case KindBool, KindInt, KindFloat, KindText, KindBytes:
		return true
	}
	return false
}

// conjoin adds the constraints of c, a clause of the top-level AND, to out.
func (c *clause) conjoin(out map[string]Constraint) {
	switch c.kind {
	case clauseAnd:
		for i := range c.subs {
			c.subs[i].conjoin(out)
		}
	case clauseField:
		for _, op := range c.ops {
			if k, ok := out[c.path].narrow(op); ok {
				out[c.path] = k
			}
		}
	}
}

// narrow returns k narrowed by op, and whether op says anything k can hold.
func (k Constraint) narrow(op fieldOp) (Constraint, bool) {
	switch op.op {
	case opEq:
		if op.operand.IsNull() {
			return k, false
		}
		if k.Eq == nil {
			k.Eq, k.In = &op.operand, nil
		}
	case opIn:
		if slices.ContainsFunc(op.set, Value.IsNull) {
			return k, false
		}
		switch {
		case k.Eq != nil:
		case k.In == nil:
			k.In = append(make([]Value, 0, len(op.set)), op.set...)
		default:
			k.In = slices.DeleteFunc(slices.Clone(k.In), func(x Value) bool {
				return !slices.ContainsFunc(op.set, func(y Value) bool { return sameValue(&x, &y) })
			})
		}
	case opGt, opGte:
		k.Lower = tighter(k.Lower, Bound{Value: op.operand, Inclusive: op.op == opGte}, 1)
	case opLt, opLte:
		k.Upper = tighter(k.Upper, Bound{Value: op.operand, Inclusive: op.op == opLte}, -1)
	default:
		return k, false
	}
	return k, true
}

// tighter returns the tighter of bounds old (may be nil) and b: the higher
// for a lower bound (dir 1), the lower for an upper one (dir -1), the
// exclusive one on a tie. Bounds of different families cannot both hold;
// either is then correct, and old is kept.
func tighter(old *Bound, b Bound, dir int) *Bound {
	if old == nil {
		return &b
	}
	c, ok := order(&b.Value, &old.Value)
	if ok && (c*dir > 0 || c == 0 && !b.Inclusive) {
		return &b
	}
	return old
}

// match reports whether doc satisfies c. Evaluation passes values by
// pointer: a Value is over 100 bytes, and copying it per field and per
// operator would cost more than the comparisons.
func (c *clause) match(doc *Value) bool {
	switch c.kind {
	case clauseAnd:
		for i := range c.subs {
			if !c.subs[i].match(doc) {
				return false
			}
		}
		return true
	case clauseOr:
		for i := range c.subs {
			if c.subs[i].match(doc) {
				return true
			}
		}
		return false
	case clauseNot:
		return !c.subs[0].match(doc)
	}
	return allHold(c.ops, lookup(doc, c.segs))
}

// lookup returns the value at the path segs into nested maps, or nil when
// there is none.
func lookup(v *Value, segs []string) *Value {
	for _, s := range segs {
		fields, _ := v.Fields()
		i := slices.IndexFunc(fields, func(f Field) bool { return f.Key == s })
		if i < 0 {
			return nil
		}
		v = &fields[i].Value
	}
	return v
}

// allHold reports whether every op holds on a field's value v (nil when
// the field is missing).
func allHold(ops []fieldOp, v *Value) bool {
	for i := range ops {
		if !ops[i].holds(v) {
			return false
		}
	}
	return true
}

// holds reports whether op holds on a field's value v (nil when the field
// is missing).
func (op *fieldOp) holds(v *Value) bool {
	switch op.op {
	case opEq:
		return equalsOperand(v, &op.operand)
	case opNe:
		return !equalsOperand(v, &op.operand)
	case opIn:
		return inSet(v, op.set)
	case opNin:
		return !inSet(v, op.set)
	case opExists:
		want, _ := op.operand.Bool()
		return (v != nil) == want
	case opContains:
		return v != nil && contains(v, &op.operand)
	case opNot:
		return !allHold(op.sub, v)
	}
	if v == nil {
		return false
	}
	c, ok := order(v, &op.operand)
	if !ok {
		return false
	}
	switch op.op {
	case opGt:
		return c > 0
	case opGte:
		return c >= 0
	case opLt:
		return c < 0
	}
	return c <= 0 // opLte
}

// equalsOperand reports whether a field's value v (nil when missing)
// equals operand x as $eq compares: null equals a missing field too.
func equalsOperand(v, x *Value) bool {
	if v == nil {
		return x.IsNull()
	}
	return sameValue(v, x)
}

// inSet reports whether a field's value v (nil when missing) equals, as
// $eq compares, an element of set.
func inSet(v *Value, set []Value) bool {
	for i := range set {
		if equalsOperand(v, &set[i]) {
			return true
		}
	}
	return false
}

// sameValue is $eq's equality of two values: numbers numerically (and
// exactly), everything else by [Equal].
func sameValue(a, b *Value) bool {
	if a.Kind() != b.Kind() || a.Kind() == KindFloat {
		an, aNum := a.Number()
		bn, bNum := b.Number()
		// NaN equals NaN, as in Equal.
		return aNum && bNum && compareNumbers(*a, *b, an, bn) == 0
	}
	switch a.Kind() {
	case KindInt:
		x, _ := a.Int()
		y, _ := b.Int()
		return x == y
	case KindText:
		x, _ := a.Text()
		y, _ := b.Text()
		return x == y
	}
	return Equal(*a, *b)
}

// contains reports whether v is an array with an element equal to x (as
// $eq compares) or text containing text x.
func contains(v, x *Value) bool {
	if items, ok := v.Array(); ok {
		for i := range items {
			if sameValue(&items[i], x) {
				return true
			}
		}
		return false
	}
	s, ok := v.Text()
	sub, ok2 := x.Text()
	return ok && ok2 && strings.Contains(s, sub)
}

// order compares a and b for the range operators: a negative, zero or
// positive result, and true, when both are bools, both numbers (neither
// NaN), both text or both bytes; false otherwise.
func order(a, b *Value) (int, bool) {
	if an, ok := a.Number(); ok {
		bn, ok := b.Number()
		if !ok || math.IsNaN(an) || math.IsNaN(bn) {
			return 0, false
		}
		return compareNumbers(*a, *b, an, bn), true
	}
	if a.Kind() != b.Kind() || !rangeable(a.Kind()) {
		return 0, false
	}
	return Compare(*a, *b), true
}

// rangeable reports whether the range operators order values of kind k.
func rangeable(k Kind) bool {
	switch k {
	case KindBool, KindInt, KindFloat, KindText, KindBytes:
		return true
	}
	return false
}

// parser parses one filter, collecting the field paths it reads.
type parser struct {
	fields map[string]bool
}

// pointerEscaper escapes a JSON Pointer reference token (RFC 6901).
var pointerEscaper = strings.NewReplacer("~", "~0", "/", "~1")

// errAt returns a FilterError at the JSON Pointer of tokens at.
func errAt(at []string, op, format string, args ...any) *FilterError {
	var b strings.Builder
	for _, t := range at {
		b.WriteByte('/')
		b.WriteString(pointerEscaper.Replace(t))
	}
	return &FilterError{Path: b.String(), Op: op, Reason: fmt.Sprintf(format, args...)}
}

// nest checks that a map or array at at does not nest too deep.
func nest(at []string, op string) error {
	if len(at)+1 > MaxFilterDepth {
		return errAt(at, op, "nesting deeper than %d", MaxFilterDepth)
	}
	return nil
}

// filter parses the filter map v at at.
func (p *parser) filter(v Value, at []string) (clause, error) {
	fields, ok := v.Fields()
	if !ok {
		return clause{}, errAt(at, "", "a filter must be a map, not %s", v.Kind())
	}
	if err := nest(at, ""); err != nil {
		return clause{}, err
	}
	subs := make([]clause, 0, len(fields))
	for _, f := range fields {
		at := append(at, f.Key)
		var c clause
		var err error
		switch name := f.Key; {
		case name == "$and" || name == "$or":
			c, err = p.list(name, f.Value, at)
		case name == "$not":
			c, err = p.filter(f.Value, at)
			c = clause{kind: clauseNot, subs: []clause{c}}
		case strings.HasPrefix(name, "$"):
			if _, isField := fieldOps[name]; isField {
				return clause{}, errAt(at, name, `%s is a field operator and needs a field: {"field": {%q: ...}}`, name, name)
			}
			return clause{}, errAt(at, name, "unknown top-level operator (expected $and, $or, $not or a field name)")
		default:
			c, err = p.field(name, f.Value, at)
		}
		if err != nil {
			return clause{}, err
		}
		subs = append(subs, c)
	}
	if len(subs) == 1 {
		return subs[0], nil
	}
	return clause{kind: clauseAnd, subs: subs}, nil
}

// list parses the operand of $and or $or at at.
func (p *parser) list(op string, v Value, at []string) (clause, error) {
	items, ok := v.Array()
	if !ok {
		return clause{}, errAt(at, op, "takes an array of filters, not %s", v.Kind())
	}
	if len(items) == 0 {
		return clause{}, errAt(at, op, "takes a non-empty array of filters")
	}
	if err := nest(at, op); err != nil {
		return clause{}, err
	}
	c := clause{kind: clauseAnd, subs: make([]clause, len(items))}
	if op == "$or" {
		c.kind = clauseOr
	}
	for i, item := range items {
		var err error
		if c.subs[i], err = p.filter(item, append(at, strconv.Itoa(i))); err != nil {
			return clause{}, err
		}
	}
	return c, nil
}

// field parses the condition v on field name at at: an operator map, or a
// value to equal.
func (p *parser) field(name string, v Value, at []string) (clause, error) {
	if name == "" {
		return clause{}, errAt(at, "", "empty field name")
	}
	for seg := range strings.SplitSeq(name, ".") {
		switch {
		case seg == "":
			return clause{}, errAt(at, "", "field path %q has an empty segment", name)
		case strings.HasPrefix(seg, "$"):
			return clause{}, errAt(at, "", "field path %q has a segment starting with \"$\"", name)
		}
	}
	p.fields[name] = true
	c := clause{kind: clauseField, path: name, segs: strings.Split(name, ".")}
	var err error
	if isOperatorMap(v) {
		c.ops, err = p.ops(v, at)
	} else {
		err = operand(v, at)
		c.ops = []fieldOp{{op: opEq, operand: v}}
	}
	return c, err
}

// isOperatorMap reports whether v is a map with a key starting with "$".
func isOperatorMap(v Value) bool {
	fields, _ := v.Fields()
	return slices.ContainsFunc(fields, func(f Field) bool { return strings.HasPrefix(f.Key, "$") })
}

// ops parses the operator map v at at.
func (p *parser) ops(v Value, at []string) ([]fieldOp, error) {
	if err := nest(at, ""); err != nil {
		return nil, err
	}
	fields, _ := v.Fields()
	ops := make([]fieldOp, 0, len(fields))
	for _, f := range fields {
		at := append(at, f.Key)
		code, known := fieldOps[f.Key]
		switch {
		case !strings.HasPrefix(f.Key, "$"):
			return nil, errAt(at, "", "field name %q in an operator map (operators and field names cannot mix)", f.Key)
		case f.Key == "$and" || f.Key == "$or":
			return nil, errAt(at, f.Key, "is a top-level operator; it does not apply to a field")
		case isWrapperKey(f.Key):
			return nil, errAt(at, f.Key, "a malformed %s wrapper (FromJSON converts a well-formed one)", f.Key)
		case !known:
			return nil, errAt(at, f.Key, "unknown operator")
		}
		op := fieldOp{op: code, operand: f.Value}
		var err error
		switch code {
		case opEq, opNe, opContains:
			err = operand(f.Value, at)
		case opGt, opGte, opLt, opLte:
			err = rangeOperand(f.Key, f.Value, at)
		case opIn, opNin:
			op.set, err = setOperand(f.Key, f.Value, at)
		case opExists:
			if _, ok := f.Value.Bool(); !ok {
				err = errAt(at, f.Key, "takes a bool, not %s", f.Value.Kind())
			}
		case opNot:
			if !isOperatorMap(f.Value) {
				err = errAt(at, f.Key, `takes an operator map such as {"$gt": 5}, not %s`, describe(f.Value))
			} else {
				op.sub, err = p.ops(f.Value, at)
			}
		}
		if err != nil {
			return nil, err
		}
		ops = append(ops, op)
	}
	return ops, nil
}

// describe names v's kind for an error, telling a map without operators.
func describe(v Value) string {
	if fields, ok := v.Fields(); ok && len(fields) == 0 {
		return "an empty map"
	}
	if v.Kind() == KindMap {
		return "a map of field names"
	}
	return v.Kind().String()
}

// rangeOperand checks the operand v of range operator op at at.
func rangeOperand(op string, v Value, at []string) error {
	if !rangeable(v.Kind()) {
		return errAt(at, op, "takes a bool, number, text or bytes, not %s", v.Kind())
	}
	if f, ok := v.Float(); ok && math.IsNaN(f) {
		return errAt(at, op, "takes a number that is not NaN (NaN orders against nothing)")
	}
	return nil
}

// setOperand checks the operand v of $in or $nin at at and returns its
// values.
func setOperand(op string, v Value, at []string) ([]Value, error) {
	items, ok := v.Array()
	if !ok {
		return nil, errAt(at, op, "takes an array, not %s", v.Kind())
	}
	if err := nest(at, op); err != nil {
		return nil, err
	}
	for i, item := range items {
		if err := operand(item, append(at, strconv.Itoa(i))); err != nil {
			return nil, err
		}
	}
	return items, nil
}

// operand checks a value v at at where a value (not an operator) is
// expected: no map in it may have a key starting with "$".
func operand(v Value, at []string) error {
	switch v.Kind() {
	case KindArray:
		if err := nest(at, ""); err != nil {
			return err
		}
		items, _ := v.Array()
		for i, item := range items {
			if err := operand(item, append(at, strconv.Itoa(i))); err != nil {
				return err
			}
		}
	case KindMap:
		if err := nest(at, ""); err != nil {
			return err
		}
		fields, _ := v.Fields()
		for _, f := range fields {
			at := append(at, f.Key)
			if strings.HasPrefix(f.Key, "$") {
				return errAt(at, f.Key, "a key starting with \"$\" where a value is expected (operators apply to fields; a wrapper FromJSON did not convert is malformed)")
			}
			if err := operand(f.Value, at); err != nil {
				return err
			}
		}
	}
	return nil
}
