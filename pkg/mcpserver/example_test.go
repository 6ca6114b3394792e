package mcpserver_test

import (
	"context"
	"fmt"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/specgate/specgate/pkg/mcpserver"
	"github.com/specgate/specgate/pkg/search"
	"github.com/specgate/specgate/pkg/spec"
)

// A Server answers MCP as soon as it exists; Publish hands it the loaded
// catalog. Here an in-process mcp-go client searches the petstore.
func ExampleNew() {
	ctx := context.Background()
	srv := mcpserver.New(mcpserver.Options{SpecNames: []string{"petstore"}})

	s, err := spec.Load(ctx, "../../testdata/petstore-v3.yaml", spec.Options{Name: "petstore"})
	if err != nil {
		fmt.Println(err)
		return
	}
	cat, _ := spec.NewCatalog(s)
	ix, _ := search.New(cat, search.Options{})
	srv.Publish(cat, ix, nil)

	c, _ := client.NewInProcessClient(srv.MCP())
	defer c.Close()
	c.Start(ctx)
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	init.Params.ClientInfo = mcp.Implementation{Name: "example", Version: "1"}
	c.Initialize(ctx, init)

	req := mcp.CallToolRequest{}
	req.Params.Name = "search"
	req.Params.Arguments = map[string]any{"query": "delete a pet", "limit": 1}
	res, _ := c.CallTool(ctx, req)
	fmt.Println(res.Content[0].(mcp.TextContent).Text)
	// Output: {"endpoints":[{"id":"petstore.deletePet","method":"DELETE","path":"/pet/{petId}","summary":"Deletes a pet.","spec":"petstore","tags":["pet"],"ready":true}]}
}
