package action_test

import (
	"context"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"

	"github.com/mcpkit/mcpkit/pkg/action"
)

// GreetInputs are the greet action's typed inputs; their JSON Schema is
// derived from the struct, and every transport validates against it.
type GreetInputs struct {
	Name string `json:"name" jsonschema:"who to greet"`
}

// One action served over HTTP and the command line through the same run
// path (plugins/actions serves the same App over MCP).
func Example() {
	app := action.NewApp("greeter", "greets people")
	app.MustAdd(action.Action{
		Name:        "greet",
		Description: "Greet someone by name.",
		Inputs:      (*GreetInputs)(nil),
		Web:         &action.Web{Method: http.MethodGet, Route: "/greet/:name"},
		Run: func(_ context.Context, c *action.Conn, in any) (any, error) {
			return map[string]string{"greeting": "Hello, " + in.(*GreetInputs).Name, "via": c.Type}, nil
		},
	})

	srv := httptest.NewServer(app.HTTPHandler(action.HTTPOptions{}))
	defer srv.Close()
	res, err := http.Get(srv.URL + "/api/greet/Ada")
	if err != nil {
		log.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	fmt.Println(res.StatusCode, strings.TrimSpace(string(body)))

	code := app.RunCLI(context.Background(), []string{"run", "greet", "--name", "Grace"}, os.Stdout, os.Stderr)
	fmt.Println("exit", code)
	// Output:
	// 200 {"greeting":"Hello, Ada","via":"web"}
	// {
	//   "greeting": "Hello, Grace",
	//   "via": "cli"
	// }
	// exit 0
}
