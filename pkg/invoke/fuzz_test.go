package invoke

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// FuzzBuildRequest feeds arbitrary values to every parameter location and
// the body: Prepare must never panic, and a request it builds never leaves
// the base URL's host or the endpoint's path.
func FuzzBuildRequest(f *testing.F) {
	f.Add("1", "1", "1", "1", "x-api-key", "MODEL")
	f.Add("1", "1", "1", "1", "Forwarded", "for=10.0.0.1")
	for _, seed := range []string{"1", "..", "/", "%2F", "http://evil.example/", "a\r\nb", "é", "?#&=", "\x00", "{petId}", ";a=1", "[0]", "9007199254740993", "1e400", "-0.5e-400", "12345678901234567890"} {
		f.Add(seed, seed, seed, seed, "k", seed)
	}
	s := parseSpec(f, "pets", petDoc, "http://api.example.test:8080/api/v1")
	get := endpoint(f, s, "getPet")
	put := endpoint(f, s, "updatePet")
	list := endpoint(f, s, "listPets")
	c := New(Options{})
	// The configured key fills X-API-Key; the model may never set it, even
	// with credential headers allowed.
	keyed := New(Options{AllowModelCredentialHeaders: true, Specs: map[string]SpecOptions{"pets": {Auth: map[string]Credential{"api_key": {Value: "CONFKEY"}}}}})
	// Names the config fills (the query key, the cookie) are never placed by
	// an exploded object's keys either.
	rs := parseSpec(f, "rn", reservedDoc, "http://api.example.test:8080")
	rq, rc := endpoint(f, rs, "q"), endpoint(f, rs, "c")
	reserved := reservedClient(false)
	f.Add("1", "1", "1", "1", "api_key", "MODELKEY")
	f.Add("1", "1", "1", "1", "Api_Key", "MODELKEY")
	f.Add("1", "1", "1", "1", "sid", "MODELKEY")
	f.Fuzz(func(t *testing.T, path, query, header, cookie, bodyKey, bodyValue string) {
		if call, err := reserved.Prepare(t.Context(), rq, Args{Parameters: map[string]any{"filter": map[string]any{bodyKey: bodyValue}, query: header}}); err == nil {
			for k, v := range call.URL().Query() {
				if strings.EqualFold(k, "api_key") && (len(v) != 1 || v[0] != confKey) {
					t.Fatalf("the model set the query key: %s", call.URL().RawQuery)
				}
			}
		}
		if call, err := reserved.Prepare(t.Context(), rc, Args{Parameters: map[string]any{"prefs": map[string]any{bodyKey: bodyValue}}}); err == nil {
			req := &http.Request{Header: call.header}
			for _, ck := range req.Cookies() {
				if ck.Name == "sid" && ck.Value != confCookie {
					t.Fatalf("the model set the cookie: %q", call.header.Get("Cookie"))
				}
			}
		}
		if call, err := keyed.Prepare(t.Context(), list, Args{Parameters: map[string]any{"status": "sold"}, Headers: map[string]string{bodyKey: bodyValue}}); err == nil {
			if v := call.header.Values("X-Api-Key"); len(v) > 0 {
				t.Fatalf("the model set X-API-Key: %q", v)
			}
		}
		check := func(call *Call, err error) {
			if err != nil {
				return
			}
			u := call.URL()
			if u.Host != "api.example.test:8080" || u.Scheme != "http" || u.User != nil {
				t.Fatalf("left the host: %s", u)
			}
			segs := strings.Split(u.EscapedPath(), "/")
			if len(segs) != 5 || segs[1] != "api" || segs[2] != "v1" || segs[3] != "pets" {
				t.Fatalf("left the path: %s", u.EscapedPath())
			}
			if segs[4] == "." || segs[4] == ".." || segs[4] == "" {
				t.Fatalf("bad segment: %q", segs[4])
			}
			for _, vs := range call.header {
				for _, v := range vs {
					if strings.ContainsAny(v, "\r\n\x00") {
						t.Fatalf("header value %q", v)
					}
				}
			}
		}
		check(c.Prepare(t.Context(), get, Args{
			Parameters: map[string]any{"petId": path, "limit": query, "X-Trace": header, "session": cookie},
			Headers:    map[string]string{bodyKey: bodyValue},
		}))
		check(c.Prepare(t.Context(), get, Args{Parameters: map[string]any{"petId": []any{path, query}, "X-Trace": map[string]any{header: cookie}}}))
		// Numbers as the MCP layer decodes them (json.Number): never a
		// panic, whatever the text.
		check(c.Prepare(t.Context(), get, Args{Parameters: map[string]any{"petId": json.Number(path), "limit": json.Number(query)}}))
		for _, ct := range []string{"application/json", "application/x-www-form-urlencoded"} {
			check(c.Prepare(t.Context(), put, Args{
				Parameters:  map[string]any{"petId": path},
				RequestBody: map[string]any{"name": "n", "age": json.Number(bodyValue), "tags": []any{json.Number(query)}},
				ContentType: ct,
			}))
			check(c.Prepare(t.Context(), put, Args{
				Parameters:  map[string]any{"petId": path},
				RequestBody: map[string]any{"name": bodyValue, bodyKey: map[string]any{query: []any{header}}},
				ContentType: ct,
			}))
		}
	})
}
