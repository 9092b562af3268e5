module github.com/mcpkit/mcpkit/examples/minimal

go 1.26.0

require (
	github.com/mcpkit/mcpkit v0.0.0
	github.com/modelcontextprotocol/go-sdk v1.8.0
)

require (
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/google/jsonschema-go v0.4.3 // indirect
	github.com/redis/go-redis/v9 v9.23.0 // indirect
	github.com/segmentio/asm v1.1.3 // indirect
	github.com/segmentio/encoding v0.5.4 // indirect
	github.com/yosida95/uritemplate/v3 v3.0.2 // indirect
	go.uber.org/atomic v1.12.0 // indirect
	golang.org/x/oauth2 v0.37.0 // indirect
	golang.org/x/sync v0.25.0 // indirect
	golang.org/x/sys v0.50.0 // indirect
	golang.org/x/time v0.15.0 // indirect
)

replace github.com/mcpkit/mcpkit => ../../
