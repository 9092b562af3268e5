module github.com/mcpkit/mcpkit/examples/hello-plugin

go 1.26.0

require github.com/mcpkit/mcpkit v0.0.0

replace github.com/mcpkit/mcpkit => ../../
