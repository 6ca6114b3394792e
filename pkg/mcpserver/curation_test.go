package mcpserver

import (
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/specgate/specgate/pkg/invoke"
	"github.com/specgate/specgate/pkg/ratelimit"
	"github.com/specgate/specgate/pkg/spec"
)

// curatedFixture serves petstore curated by c against a recording upstream.
func curatedFixture(t *testing.T, c spec.Curation, readOnly bool) (*client.Client, *recorder, *Server) {
	t.Helper()
	rec := &recorder{}
	up := httptest.NewServer(rec)
	t.Cleanup(up.Close)
	s := petstoreAt(t, up.URL)
	f, err := spec.NewFilter(c)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Apply(s); err != nil {
		t.Fatal(err)
	}
	cat, ix, eps := servedCatalog(t, time.Hour, s)
	l, err := ratelimit.New(ratelimit.Options{Endpoints: eps})
	if err != nil {
		t.Fatal(err)
	}
	cl := invoke.New(invoke.Options{})
	t.Cleanup(cl.Close)
	srv := New(Options{SpecNames: []string{"petstore"}, ReadOnly: readOnly, Caller: invoke.Caller{Governed: invoke.Governed{Client: cl, Limiter: l}}})
	srv.Publish(cat, ix, nil)
	return connectTB(t, srv, nil), rec, srv
}

func TestCurationSeenThroughTools(t *testing.T) {
	c, rec, _ := curatedFixture(t, spec.Curation{
		Key:      "specs[petstore]",
		ReadOnly: true,
		Include:  []string{"tag:pet", "tag:store"},
		Exclude:  []string{"getInventory"},
	}, true)

	// Search shows only what is served, whatever the query.
	for _, q := range []string{"delete a pet", "inventory", "create a user", "pet"} {
		res, isErr := callTool(t, c, "search", map[string]any{"query": q, "limit": 50})
		if isErr {
			t.Fatalf("search %q: %v", q, res)
		}
		for _, h := range res["endpoints"].([]any) {
			hit := h.(map[string]any)
			id := hit["id"].(string)
			switch {
			case hit["method"] != "GET":
				t.Errorf("search %q: read-only server returned %s %s", q, hit["method"], id)
			case id == "petstore.getInventory":
				t.Errorf("search %q: excluded endpoint returned", q)
			case strings.Contains(hit["path"].(string), "/user"):
				t.Errorf("search %q: endpoint not included returned: %s", q, id)
			}
		}
	}

	tests := []struct {
		id, because string
	}{
		{"petstore.deletePet", "specs[petstore].read_only"},
		{"petstore.getInventory", `specs[petstore].exclude[0] ("getInventory")`},
		{"petstore.loginUser", "no pattern of specs[petstore].include selects it"},
	}
	for _, tt := range tests {
		for _, tool := range []string{"inspect", "invoke"} {
			t.Run(tool+" "+tt.id, func(t *testing.T) {
				args := map[string]any{"endpointId": tt.id}
				if tool == "invoke" {
					args["parameters"] = map[string]any{"petId": 1}
				}
				res, isErr := callTool(t, c, tool, args)
				if !isErr {
					t.Fatalf("%s of an excluded endpoint succeeded: %v", tool, res)
				}
				e := errorOf(t, res)
				if e["code"] != "not_found" {
					t.Errorf("code = %v", e["code"])
				}
				msg, hint := e["message"].(string), e["hint"].(string)
				if !strings.Contains(msg, "excluded by the server's config") || !strings.Contains(msg, tt.because) {
					t.Errorf("message = %q, want it to name %q", msg, tt.because)
				}
				if !strings.Contains(hint, "does not serve it") {
					t.Errorf("hint = %q", hint)
				}
			})
		}
	}
	// A served endpoint still works, and nothing excluded reached the wire.
	res, isErr := callTool(t, c, "invoke", map[string]any{"endpointId": "petstore.getPetById", "parameters": map[string]any{"petId": 1}})
	if isErr {
		t.Fatalf("invoke getPetById: %v", res)
	}
	if n := rec.count(); n != 1 {
		t.Errorf("upstream saw %d requests, want 1", n)
	}
	// An id the spec never had keeps the plain hint.
	res, _ = callTool(t, c, "inspect", map[string]any{"endpointId": "petstore.nosuch"})
	if hint := errorOf(t, res)["hint"].(string); !strings.Contains(hint, "Use search") {
		t.Errorf("unknown id hint = %q", hint)
	}
}

func TestInstructionsSayReadOnly(t *testing.T) {
	for _, readOnly := range []bool{false, true} {
		c, _, _ := curatedFixture(t, spec.Curation{ReadOnly: readOnly}, readOnly)
		init := mcp.InitializeRequest{}
		init.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
		res, err := c.Initialize(t.Context(), init)
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(res.Instructions, "This server is read-only"); got != readOnly {
			t.Errorf("ReadOnly %v: instructions mention read-only = %v:\n%s", readOnly, got, res.Instructions)
		}
		if len(res.Instructions) > 2048 {
			t.Errorf("instructions are %d bytes", len(res.Instructions))
		}
	}
}

// TestEndpointNotServedRefusedAlikeByInvokeAndScripts: invoke and a
// script's api.invoke enter by one door, so an endpoint the config
// excludes, or one left out at load (which scripts once called unknown),
// is refused to both with the same code and message, and nothing is sent.
func TestEndpointNotServedRefusedAlikeByInvokeAndScripts(t *testing.T) {
	rec := &recorder{}
	up := httptest.NewServer(rec)
	t.Cleanup(up.Close)
	s := petstoreAt(t, up.URL)
	f, err := spec.NewFilter(spec.Curation{Key: "specs[petstore]", Exclude: []string{"getInventory"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Apply(s); err != nil {
		t.Fatal(err)
	}
	s.Unusable = map[string]string{"petstore.tooDeep": "its schema nests past the depth bound"}
	cat, ix, _ := servedCatalog(t, time.Hour, s)
	cl := invoke.New(invoke.Options{})
	t.Cleanup(cl.Close)
	srv := New(Options{SpecNames: []string{"petstore"}, Caller: invoke.Caller{Governed: invoke.Governed{Client: cl}}})
	srv.Publish(cat, ix, nil)
	c := connectTB(t, srv, nil)

	for _, tt := range []struct{ id, says string }{
		{"petstore.getInventory", "excluded by the server's config"},
		{"petstore.tooDeep", "is in the spec but is not served: its schema nests past the depth bound"},
		{"petstore.nosuch", `no endpoint "petstore.nosuch"`},
	} {
		t.Run(tt.id, func(t *testing.T) {
			res, isErr := callTool(t, c, "invoke", map[string]any{"endpointId": tt.id})
			if !isErr {
				t.Fatalf("invoke succeeded: %v", res)
			}
			direct := errorOf(t, res)
			code := `try { await api.invoke(` + strconv.Quote(tt.id) + `, {}); return "sent"; } catch (e) { return {code: e.code, message: e.message}; }`
			res, isErr = callTool(t, c, "run_script", map[string]any{"code": code})
			if isErr {
				t.Fatalf("run_script failed: %v", res)
			}
			thrown, _ := res["result"].(map[string]any)
			msg, _ := direct["message"].(string)
			if direct["code"] != "not_found" || thrown["code"] != direct["code"] {
				t.Errorf("codes: invoke %v, api.invoke %v; want not_found for both", direct["code"], thrown["code"])
			}
			if got, _ := thrown["message"].(string); !strings.Contains(msg, tt.says) || !strings.HasPrefix(got, msg) {
				t.Errorf("messages: invoke %q, api.invoke %q; want both to say %q", msg, got, tt.says)
			}
		})
	}
	if n := rec.count(); n != 0 {
		t.Errorf("upstream saw %d requests, want none", n)
	}
}
