package mcpcore

import (
	"context"
	"sync"
	"testing"
)

type nopPlugin struct{}

func (nopPlugin) Attach(context.Context, *Host) error { return nil }
func (nopPlugin) Close(context.Context) error         { return nil }

var registerOK sync.Once

func TestRegisterRejectsBadRegistrations(t *testing.T) {
	newNop := func() Plugin { return nopPlugin{} }
	registerOK.Do(func() { Register(PluginInfo{Name: "reg-ok", New: newNop, Default: true}) })
	for _, tc := range []struct {
		name string
		info PluginInfo
	}{
		{"duplicate", PluginInfo{Name: "reg-ok", New: newNop}},
		{"empty name", PluginInfo{Name: "", New: newNop}},
		{"invalid name", PluginInfo{Name: "Bad Name", New: newNop}},
		{"nil New", PluginInfo{Name: "reg-nil"}},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: Register did not panic", tc.name)
				}
			}()
			Register(tc.info)
		}()
	}
	if _, ok := LookupPlugin("reg-ok"); !ok {
		t.Fatal("registered plugin not found")
	}
	found := false
	for _, n := range DefaultPluginNames() {
		found = found || n == "reg-ok"
	}
	if !found {
		t.Fatal("default plugin not listed as default")
	}
}
