package docstore_test

import (
	"context"
	"fmt"
	"log"

	"github.com/mcpkit/mcpkit/pkg/docstore"
)

// Open an in-memory store, index a field, write documents from JSON and
// page the ones a filter selects, through the index.
func Example() {
	ctx := context.Background()
	s, err := docstore.Open("", docstore.Options{}) // "" keeps the store in memory; a path opens a bbolt file
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()

	if _, err := s.CreateIndex(ctx, "users", docstore.IndexDef{Name: "by_age", Fields: []string{"age"}}, nil); err != nil {
		log.Fatal(err)
	}
	for id, doc := range map[string]string{
		"ada":   `{"name": "Ada", "age": 36, "langs": ["en", "fr"]}`,
		"alan":  `{"name": "Alan", "age": 41.5}`,
		"grace": `{"name": "Grace", "age": 29}`,
	} {
		v, err := docstore.FromJSON([]byte(doc))
		if err != nil {
			log.Fatal(err)
		}
		if _, err := s.Put(ctx, "users", docstore.Text(id), v); err != nil {
			log.Fatal(err)
		}
	}

	filter, err := docstore.FromJSON([]byte(`{"age": {"$gte": 30}}`))
	if err != nil {
		log.Fatal(err)
	}
	f, err := docstore.ParseFilter(filter)
	if err != nil {
		log.Fatal(err)
	}
	page, err := s.Page(ctx, "users", docstore.Query{Filter: f, OrderBy: "age"})
	if err != nil {
		log.Fatal(err)
	}
	for _, d := range page.Docs {
		js, _ := docstore.ToJSON(d.Value)
		id, _ := d.ID.Text()
		fmt.Printf("%s %s\n", id, js)
	}
	fmt.Println("index:", page.Plan.Index, "examined:", page.Plan.Examined)
	// Output:
	// ada {"name":"Ada","age":36,"langs":["en","fr"]}
	// alan {"name":"Alan","age":41.5}
	// index: by_age examined: 2
}
