package resp

import "testing"

func TestValuePredicates(t *testing.T) {
	wrappedErr := Value{Kind: KindAttribute, Wrapped: &Value{Kind: KindBulkError, Str: []byte("E x")}}
	for _, tc := range []struct {
		v        Value
		isErr    bool
		text     string
		isNull   bool
		kindName string
	}{
		{str(KindSimpleError, "ERR a"), true, "ERR a", false, "simple_error"},
		{str(KindBulkError, "E b"), true, "E b", false, "bulk_error"},
		{wrappedErr, true, "E x", false, "attribute"},
		{Value{Kind: KindAttribute, Wrapped: &Value{Kind: KindNull}}, false, "", false, "attribute"},
		{Value{Kind: KindAttribute}, false, "", false, "attribute"},
		{str(KindSimpleString, "ERR"), false, "", false, "simple_string"},
		{Value{Kind: KindNull}, false, "", true, "null"},
		{Value{Kind: KindBulkString, Nil: true}, false, "", true, "bulk_string"},
		{Value{Kind: KindArray, Nil: true}, false, "", true, "array"},
		{Value{Kind: KindBulkString}, false, "", false, "bulk_string"},
	} {
		if tc.v.IsError() != tc.isErr || tc.v.ErrorText() != tc.text || tc.v.IsNull() != tc.isNull || tc.v.Kind.String() != tc.kindName {
			t.Errorf("%#v: IsError %v ErrorText %q IsNull %v Kind %s", tc.v, tc.v.IsError(), tc.v.ErrorText(), tc.v.IsNull(), tc.v.Kind)
		}
	}
	names := map[string]bool{}
	for _, k := range []Kind{KindSimpleString, KindSimpleError, KindInteger, KindBulkString, KindArray, KindNull, KindDouble,
		KindBoolean, KindBulkError, KindVerbatim, KindBigNumber, KindMap, KindSet, KindAttribute, KindPush} {
		names[k.String()] = true
	}
	if len(names) != 15 {
		t.Errorf("kind names not distinct: %v", names)
	}
	if got := Kind('x').String(); got != "kind(0x78)" {
		t.Errorf("unknown kind: %s", got)
	}
}
