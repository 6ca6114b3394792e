package invoke

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// escapedKey is a query API key that changes when percent-encoded.
const escapedKey = "a+b/c=d=="

const escapedKeyDoc = `{"openapi":"3.0.3","info":{"title":"ek","version":"1"},
 "components":{"securitySchemes":{"qry":{"type":"apiKey","in":"query","name":"api_key"}}},
 "security":[{"qry":[]}],
 "paths":{"/echo":{"get":{"operationId":"echo","parameters":[
   {"name":"status","in":"query","schema":{"type":"integer"}}],"responses":{"200":{"description":"ok"}}}}}}`

// secretEncodings lists the forms a secret could come back in.
func secretEncodings(s string) map[string]string {
	out := map[string]string{
		"raw":        s,
		"query":      url.QueryEscape(s),
		"path":       url.PathEscape(s),
		"lower hex":  strings.ToLower(url.QueryEscape(s)),
		"php json":   strings.ReplaceAll(s, "/", `\/`),
		"std base64": base64.StdEncoding.EncodeToString([]byte(s)),
		"url base64": base64.URLEncoding.EncodeToString([]byte(s)),
		"raw std":    base64.RawStdEncoding.EncodeToString([]byte(s)),
		"raw url":    base64.RawURLEncoding.EncodeToString([]byte(s)),
	}
	out["escaped base64"] = url.QueryEscape(out["std base64"])
	return out
}

// A query key with "+", "/" or "=" is sent percent-encoded; wherever the
// upstream echoes the request URI (the body, Location, a rate-limit
// header, an error body) no encoding of it may reach the Result or the
// error.
func TestQueryKeyEscapedFormRedacted(t *testing.T) {
	forms := secretEncodings(escapedKey)
	up := newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
		var echoed []string
		for _, f := range forms {
			echoed = append(echoed, f)
		}
		body, _ := json.Marshal(map[string]any{"requestURI": r.RequestURI, "forms": echoed})
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Location", r.RequestURI)
		w.Header().Set("X-RateLimit-Policy", "uri="+r.RequestURI+"; "+strings.Join(echoed, " "))
		status := http.StatusOK
		if s := r.URL.Query().Get("status"); s != "" {
			fmt.Sscan(s, &status)
		}
		w.WriteHeader(status)
		_, _ = w.Write(body)
	})
	s := parseSpec(t, "ek", escapedKeyDoc, up.URL)
	e := endpoint(t, s, "echo")
	c := New(Options{Specs: map[string]SpecOptions{"ek": {Auth: map[string]Credential{"qry": {Value: escapedKey}}}}})
	for _, status := range []int{200, 429, 500, 401} {
		t.Run(fmt.Sprint(status), func(t *testing.T) {
			call, err := c.Prepare(t.Context(), e, Args{Parameters: map[string]any{"status": status}})
			if err != nil {
				t.Fatal(err)
			}
			res, err := call.Do(t.Context())
			if res == nil {
				t.Fatalf("no result: %v", err)
			}
			if got := up.last(t).RawQuery; !strings.Contains(got, "api_key="+url.QueryEscape(escapedKey)) {
				t.Fatalf("the key was not sent escaped: %q", got)
			}
			out, _ := json.Marshal(res)
			texts := map[string]string{"result": string(out), "raw body": string(res.RawBody), "raw headers": fmt.Sprint(res.RawHeaders)}
			if err != nil {
				texts["error"] = err.Error()
				var rl *UpstreamRateLimitError
				var he *HTTPError
				var ae *AuthError
				switch {
				case errors.As(err, &rl):
					texts["error body"] = rl.Body
				case errors.As(err, &he):
					texts["error body"] = he.Body
				case errors.As(err, &ae):
					texts["error reason"] = ae.Reason
				}
			}
			for where, text := range texts {
				for name, f := range forms {
					if strings.Contains(text, f) {
						t.Errorf("%s holds the key's %s form %q", where, name, f)
					}
				}
			}
		})
	}
}
