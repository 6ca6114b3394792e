package invoke

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/specgate/specgate/pkg/answer"
	"github.com/specgate/specgate/pkg/ratelimit"
	"github.com/specgate/specgate/pkg/spec"
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

const reservedDoc = `{"openapi":"3.0.3","info":{"title":"rn","version":"1"},
 "components":{"securitySchemes":{
   "qry":{"type":"apiKey","in":"query","name":"api_key"},
   "ck":{"type":"apiKey","in":"cookie","name":"sid"},
   "hdr":{"type":"apiKey","in":"header","name":"X-Api-Key"},
   "bearer":{"type":"http","scheme":"bearer"}
 }},
 "paths":{
  "/q":{"get":{"operationId":"q","security":[{"qry":[]}],"parameters":[
    {"name":"filter","in":"query","schema":{"type":"object","additionalProperties":{"type":"string"}}},
    {"name":"deep","in":"query","style":"deepObject","explode":true,"schema":{"type":"object","additionalProperties":{"type":"string"}}},
    {"name":"API_KEY","in":"query","schema":{"type":"string"}}],"responses":{"200":{"description":"ok"}}}},
  "/c":{"get":{"operationId":"c","security":[{"ck":[]}],"parameters":[
    {"name":"prefs","in":"cookie","explode":true,"schema":{"type":"object","additionalProperties":{"type":"string"}}},
    {"name":"Cookie","in":"header","schema":{"type":"string"}}],"responses":{"200":{"description":"ok"}}}},
  "/h":{"get":{"operationId":"h","security":[{"hdr":[]}],"parameters":[
    {"name":"X-Api-Key","in":"header","schema":{"type":"string"}},
    {"name":"X-HTTP-Method-Override","in":"header","schema":{"type":"string"}}],"responses":{"200":{"description":"ok"}}}},
  "/t":{"get":{"operationId":"t","security":[{"bearer":[]}],"responses":{"200":{"description":"ok"}}}}
 }}`

const (
	confKey    = "CONF-query-key"
	confCookie = "CONF-cookie-sid"
	confHeader = "CONF-header-key"
	confBearer = "CONF-bearer"
	confStatic = "CONF-static"
)

func reservedClient(allowCred bool) *Client {
	return New(Options{AllowModelCredentialHeaders: allowCred, Specs: map[string]SpecOptions{"rn": {
		Headers: map[string]string{"X-Static-Key": confStatic},
		Auth: map[string]Credential{
			"qry": {Value: confKey}, "ck": {Value: confCookie}, "hdr": {Value: confHeader}, "bearer": {Token: confBearer},
		},
	}}})
}

// A name the config fills (a query key, a cookie, a credential or static
// header) never comes from the model: a declared parameter of that name is
// dropped, and every other route to it (an exploded object's keys, a
// Cookie header parameter or extra header, an extra header even when
// credential headers are allowed) is refused, naming the parameter.
func TestObjectParamCannotPlaceConfiguredKey(t *testing.T) {
	up := newRecorder(t, nil)
	s := parseSpec(t, "rn", reservedDoc, up.URL)
	refused := []struct {
		name      string
		allowCred bool
		op        string
		params    map[string]any
		headers   map[string]string
		want      string
	}{
		{name: "exploded query object", op: "q", params: map[string]any{"filter": map[string]any{"api_key": "MODELKEY", "x": "1"}},
			want: `parameter "filter" (query): would set the query key "api_key"`},
		{name: "exploded query object, other case", op: "q", params: map[string]any{"filter": map[string]any{"API_Key": "MODELKEY"}},
			want: `parameter "filter" (query): would set the query key "api_key"`},
		{name: "query parameter of another case", op: "q", params: map[string]any{"API_KEY": "MODELKEY"},
			want: `parameter "API_KEY" (query): would set the query key "api_key"`},
		{name: "exploded cookie object", op: "c", params: map[string]any{"prefs": map[string]any{"sid": "MODELKEY"}},
			want: `parameter "prefs" (cookie): would set the cookie "sid"`},
		{name: "Cookie header parameter", op: "c", params: map[string]any{"Cookie": "theme=dark; sid=MODELKEY"},
			want: `parameter "Cookie" (header): would set the cookie "sid"`},
		{name: "Cookie header routed to the parameter, credential headers allowed", allowCred: true, op: "c", headers: map[string]string{"cookie": "sid=MODELKEY"},
			want: `parameter "Cookie" (header): would set the cookie "sid"`},
		{name: "static header, credential headers allowed", allowCred: true, op: "q", headers: map[string]string{"x-static-key": "MODELKEY"},
			want: `header "x-static-key": set from the config`},
		{name: "Authorization, credential headers allowed", allowCred: true, op: "t", headers: map[string]string{"Authorization": "Bearer MODELKEY"},
			want: `header "Authorization": set from the config`},
		{name: "Authorization", op: "t", headers: map[string]string{"Authorization": "Bearer MODELKEY"},
			want: `header "Authorization": set from the config`},
	}
	for _, tt := range refused {
		t.Run(tt.name, func(t *testing.T) {
			before := up.count()
			_, err := reservedClient(tt.allowCred).Prepare(t.Context(), endpoint(t, s, tt.op), Args{Parameters: tt.params, Headers: tt.headers})
			ae := asArgError(t, err)
			if !strings.Contains(strings.Join(ae.Problems, "; "), tt.want) {
				t.Errorf("problems %q, want one containing %q", ae.Problems, tt.want)
			}
			if up.count() != before {
				t.Error("a refused call reached the upstream")
			}
		})
	}

	sent := []struct {
		name      string
		allowCred bool
		op        string
		params    map[string]any
		headers   map[string]string
		check     func(t *testing.T, r recorded)
	}{
		{name: "deepObject key is a different key", op: "q", params: map[string]any{"deep": map[string]any{"api_key": "MODELKEY"}},
			check: func(t *testing.T, r recorded) {
				q, _ := url.ParseQuery(r.RawQuery)
				if got := q["api_key"]; len(got) != 1 || got[0] != confKey || q.Get("deep[api_key]") != "MODELKEY" {
					t.Errorf("query %q", r.RawQuery)
				}
			}},
		{name: "declared header parameter is dropped", op: "h", params: map[string]any{"X-Api-Key": "MODELKEY"},
			check: func(t *testing.T, r recorded) {
				if got := r.Header.Values("X-Api-Key"); len(got) != 1 || got[0] != confHeader {
					t.Errorf("X-Api-Key %q", got)
				}
			}},
		{name: "header routed to the declared parameter is dropped", allowCred: true, op: "h", headers: map[string]string{"x-api-key": "MODELKEY"},
			check: func(t *testing.T, r recorded) {
				if got := r.Header.Values("X-Api-Key"); len(got) != 1 || got[0] != confHeader {
					t.Errorf("X-Api-Key %q", got)
				}
			}},
		{name: "another cookie is fine", op: "c", params: map[string]any{"prefs": map[string]any{"theme": "dark"}},
			check: func(t *testing.T, r recorded) {
				if got := r.Header.Get("Cookie"); got != "theme=dark; sid="+confCookie {
					t.Errorf("Cookie %q", got)
				}
			}},
		{name: "a cookie the config does not fill, credential headers allowed", allowCred: true, op: "q", headers: map[string]string{"Cookie": "sid=x"},
			check: func(t *testing.T, r recorded) {
				if got := r.Header.Get("Cookie"); got != "sid=x" {
					t.Errorf("Cookie %q", got)
				}
			}},
	}
	for _, tt := range sent {
		t.Run(tt.name, func(t *testing.T) {
			call, err := reservedClient(tt.allowCred).Prepare(t.Context(), endpoint(t, s, tt.op), Args{Parameters: tt.params, Headers: tt.headers})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := call.Do(t.Context()); err != nil {
				t.Fatal(err)
			}
			tt.check(t, up.last(t))
		})
	}
}

// Headers that change the method the upstream runs or the client address
// it trusts are refused from the headers argument and from header
// parameters, unless the config allows them.
func TestOverrideHeadersRefused(t *testing.T) {
	up := newRecorder(t, nil)
	s := parseSpec(t, "rn", reservedDoc, up.URL)
	h := endpoint(t, s, "h")
	strict := reservedClient(true) // credential headers allowed: these are refused all the same
	for _, name := range []string{"X-HTTP-Method-Override", "x-forwarded-for", "Forwarded", "X-HTTP-Method", "X-Method-Override"} {
		t.Run(name, func(t *testing.T) {
			_, err := strict.Prepare(t.Context(), endpoint(t, s, "q"), Args{Headers: map[string]string{name: "DELETE"}})
			ae := asArgError(t, err)
			if want := `header "` + name + `": changes how the upstream reads the request`; !strings.Contains(strings.Join(ae.Problems, "; "), want) {
				t.Errorf("problems %q, want %q", ae.Problems, want)
			}
		})
	}
	t.Run("header parameter", func(t *testing.T) {
		_, err := strict.Prepare(t.Context(), h, Args{Parameters: map[string]any{"X-HTTP-Method-Override": "DELETE"}})
		ae := asArgError(t, err)
		if want := `parameter "X-HTTP-Method-Override" (header): changes how`; !strings.Contains(strings.Join(ae.Problems, "; "), want) {
			t.Errorf("problems %q, want %q", ae.Problems, want)
		}
	})
	t.Run("allowed by the config", func(t *testing.T) {
		yes := true
		c := New(Options{Specs: map[string]SpecOptions{"rn": {AllowModelOverrideHeaders: &yes, Auth: map[string]Credential{"hdr": {Value: confHeader}}}}})
		call, err := c.Prepare(t.Context(), h, Args{Parameters: map[string]any{"X-HTTP-Method-Override": "DELETE"}, Headers: map[string]string{"X-Forwarded-For": "10.0.0.1"}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := call.Do(t.Context()); err != nil {
			t.Fatal(err)
		}
		r := up.last(t)
		if r.Header.Get("X-Http-Method-Override") != "DELETE" || r.Header.Get("X-Forwarded-For") != "10.0.0.1" {
			t.Errorf("headers %v", r.Header)
		}
	})
}

// TestOverrideHeadersRefusedIncludeProxyAndRewriteHeaders: the deny-list
// let through the headers a reverse proxy or framework reads as the
// client's address, host or scheme, or as the method or path to run.
func TestOverrideHeadersRefusedIncludeProxyAndRewriteHeaders(t *testing.T) {
	up := newRecorder(t, nil)
	s := parseSpec(t, "rn", reservedDoc, up.URL)
	q := endpoint(t, s, "q")
	strict := reservedClient(true)
	tests := []struct{ name, value string }{
		{"X-Real-IP", "127.0.0.1"},
		{"x-real-ip", "10.0.0.1"},
		{"X-Forwarded-Host", "admin.internal"},
		{"X-FORWARDED-HOST", "admin.internal"},
		{"X-Forwarded-Proto", "https"},
		{"X-Original-Method", "DELETE"},
		{"X-Original-HTTP-Method", "DELETE"},
		{"x-original-http-method", "PUT"},
		{"X-Original-URL", "/admin"},
		{"X-Rewrite-URL", "/admin"},
		{"x-rewrite-url", "/admin/users"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := strict.Prepare(t.Context(), q, Args{Headers: map[string]string{tt.name: tt.value}})
			ae := asArgError(t, err)
			if want := `header "` + tt.name + `": changes how the upstream reads the request`; !strings.Contains(strings.Join(ae.Problems, "; "), want) {
				t.Errorf("problems %q, want %q", ae.Problems, want)
			}
		})
	}
	t.Run("allowed by the config", func(t *testing.T) {
		yes := true
		c := New(Options{Specs: map[string]SpecOptions{"rn": {AllowModelOverrideHeaders: &yes, Auth: map[string]Credential{"hdr": {Value: confHeader}}}}})
		if _, err := c.Prepare(t.Context(), q, Args{Headers: map[string]string{"X-Real-IP": "10.0.0.1", "X-Rewrite-URL": "/x"}}); err != nil {
			t.Errorf("allowed override headers refused: %v", err)
		}
	})
	t.Run("a look-alike name passes", func(t *testing.T) {
		if _, err := strict.Prepare(t.Context(), q, Args{Headers: map[string]string{"X-Real-IP-Note": "x"}}); err != nil {
			t.Errorf("X-Real-IP-Note refused: %v", err)
		}
	})
}

const bigIntDoc = `{"openapi":"3.0.3","info":{"title":"bi","version":"1"},
 "components":{"schemas":{"Item":{"type":"object","properties":{
   "n":{"type":"integer"},
   "list":{"type":"array","items":{"type":"integer"}},
   "inner":{"type":"object","properties":{"n":{"type":"integer"}}}}}}},
 "paths":{"/items/{id}":{"post":{"operationId":"put","parameters":[
   {"name":"id","in":"path","required":true,"schema":{"type":"integer"}},
   {"name":"n","in":"query","schema":{"type":"integer"}},
   {"name":"ids","in":"query","schema":{"type":"array","items":{"type":"integer"}}},
   {"name":"X-N","in":"header","schema":{"type":"integer"}},
   {"name":"c","in":"cookie","schema":{"type":"integer"}}],
  "requestBody":{"content":{
   "application/json":{"schema":{"$ref":"#/components/schemas/Item"}},
   "application/x-www-form-urlencoded":{"schema":{"$ref":"#/components/schemas/Item"}},
   "multipart/form-data":{"schema":{"$ref":"#/components/schemas/Item"}}}},
  "responses":{"200":{"description":"ok"}}}},
  "/bounded":{"get":{"operationId":"bounded","parameters":[
   {"name":"n","in":"query","schema":{"type":"integer","maximum":9007199254740992}},
   {"name":"i64","in":"query","schema":{"type":"integer","format":"int64"}},
   {"name":"f","in":"query","schema":{"type":"number","exclusiveMinimum":true,"minimum":9007199254740992}}],
  "requestBody":{"content":{"application/json":{"schema":{"type":"object","properties":{
   "n":{"type":"integer","maximum":9007199254740992}}}}}},
  "responses":{"200":{"description":"ok"}}}}}}`

// Integers beyond float64's 53 bits arrive exactly as the model wrote them,
// in every place a value may go; the schema is checked on the exact value.
func TestLargeIntegersSentExactly(t *testing.T) {
	up := newRecorder(t, nil)
	s := parseSpec(t, "bi", bigIntDoc, up.URL)
	e := endpoint(t, s, "put")
	c := New(Options{})
	for _, lit := range []string{"9007199254740993", "12345678901234567890", "-9223372036854775809"} {
		n := json.Number(lit)
		body := map[string]any{"n": n, "list": []any{n, json.Number("1")}, "inner": map[string]any{"n": n}}
		for _, ct := range []string{"application/json", "application/x-www-form-urlencoded", "multipart/form-data"} {
			t.Run(lit+" "+ct, func(t *testing.T) {
				call, err := c.Prepare(t.Context(), e, Args{
					Parameters:  map[string]any{"id": n, "n": n, "ids": []any{n, n}, "X-N": n, "c": n},
					RequestBody: body, ContentType: ct,
				})
				if err != nil {
					t.Fatal(err)
				}
				if _, err := call.Do(t.Context()); err != nil {
					t.Fatal(err)
				}
				r := up.last(t)
				if r.RawPath != "/items/"+lit {
					t.Errorf("path %q", r.RawPath)
				}
				if want := "n=" + lit + "&ids=" + lit + "&ids=" + lit; r.RawQuery != want {
					t.Errorf("query %q, want %q", r.RawQuery, want)
				}
				if r.Header.Get("X-N") != lit || r.Header.Get("Cookie") != "c="+lit {
					t.Errorf("header %q cookie %q", r.Header.Get("X-N"), r.Header.Get("Cookie"))
				}
				got := string(r.Body)
				switch ct {
				case "application/json":
					if want := `{"inner":{"n":` + lit + `},"list":[` + lit + `,1],"n":` + lit + `}`; got != want {
						t.Errorf("body %s, want %s", got, want)
					}
				case "application/x-www-form-urlencoded":
					if want := "inner[n]=" + lit + "&list=" + lit + "&list=1&n=" + lit; got != want {
						t.Errorf("body %s, want %s", got, want)
					}
				default:
					for _, want := range []string{"\r\n\r\n" + lit + "\r\n", `{"n":` + lit + `}`} {
						if !strings.Contains(got, want) {
							t.Errorf("multipart body lacks %q:\n%s", want, got)
						}
					}
				}
			})
		}
	}
}

// A number float64 cannot hold, or whose rounding hides a schema
// violation, is a validation problem, never a panic nor a pass.
func TestLargeIntegersValidatedExactly(t *testing.T) {
	up := newRecorder(t, nil)
	s := parseSpec(t, "bi", bigIntDoc, up.URL)
	put, bounded := endpoint(t, s, "put"), endpoint(t, s, "bounded")
	c := New(Options{})
	tests := []struct {
		name string
		e    string
		args Args
		want string // "" for no problem
	}{
		{name: "1e400 in an integer path parameter", e: "put", args: Args{Parameters: map[string]any{"id": json.Number("1e400")}}, want: `parameter "id" (path)`},
		{name: "1e400 in an integer query parameter", e: "put", args: Args{Parameters: map[string]any{"id": 1, "n": json.Number("1e400")}}, want: `parameter "n" (query)`},
		{name: "1e400 in a JSON body", e: "put", args: Args{Parameters: map[string]any{"id": 1}, RequestBody: map[string]any{"n": json.Number("1e400")}}, want: "requestBody.n"},
		{name: "1e400 in a form body", e: "put", args: Args{Parameters: map[string]any{"id": 1}, RequestBody: map[string]any{"n": json.Number("1e400")}, ContentType: "application/x-www-form-urlencoded"}, want: "requestBody.n"},
		{name: "a fraction rounded away", e: "put", args: Args{Parameters: map[string]any{"id": json.Number("9007199254740993.5")}}, want: `parameter "id" (path): value must be an integer`},
		{name: "a fraction rounded away in a JSON body", e: "put", args: Args{Parameters: map[string]any{"id": 1}, RequestBody: map[string]any{"list": []any{json.Number("9007199254740993.5")}}}, want: "requestBody.list.0: value must be an integer"},
		{name: "maximum hidden by rounding", e: "bounded", args: Args{Parameters: map[string]any{"n": json.Number("9007199254740993")}}, want: `parameter "n" (query): number must be at most 9007199254740992`},
		{name: "maximum hidden by rounding in a JSON body", e: "bounded", args: Args{RequestBody: map[string]any{"n": json.Number("9007199254740993")}}, want: "requestBody.n: number must be at most 9007199254740992"},
		{name: "at the maximum", e: "bounded", args: Args{Parameters: map[string]any{"n": json.Number("9007199254740992")}}},
		{name: "int64 range hidden by rounding", e: "bounded", args: Args{Parameters: map[string]any{"i64": json.Number("9223372036854775808")}}, want: `parameter "i64" (query)`},
		{name: "int64 maximum", e: "bounded", args: Args{Parameters: map[string]any{"i64": json.Number("9223372036854775807")}}},
		{name: "exclusive minimum", e: "bounded", args: Args{Parameters: map[string]any{"f": json.Number("9007199254740992")}}, want: `parameter "f" (query)`},
		{name: "not a number", e: "put", args: Args{Parameters: map[string]any{"id": json.Number("12abc")}}, want: `parameter "id" (path)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := put
			if tt.e == "bounded" {
				e = bounded
			}
			_, err := c.Prepare(t.Context(), e, tt.args)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("got %v, want no problem", err)
				}
				return
			}
			ae := asArgError(t, err)
			if !strings.Contains(strings.Join(ae.Problems, "; "), tt.want) {
				t.Errorf("problems %q, want one containing %q", ae.Problems, tt.want)
			}
		})
	}
}

// An upstream that bans for longer than any sane wait answers with an
// error carrying the longest wait, so the caller neither retries nor tells
// the model to come back in a second.
func TestRetryAfterFarFutureBlocks(t *testing.T) {
	up := newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "999999999")
		w.WriteHeader(http.StatusTooManyRequests)
	})
	s := parseSpec(t, "pets", petDoc, up.URL)
	call, err := New(Options{}).Prepare(t.Context(), endpoint(t, s, "getPet"), Args{Parameters: map[string]any{"petId": "1"}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = call.Do(t.Context())
	var rl *UpstreamRateLimitError
	if !errors.As(err, &rl) {
		t.Fatalf("got %T %v, want *UpstreamRateLimitError", err, err)
	}
	if rl.RetryAfter != ratelimit.MaxRetryAfter || rl.RetryAt.IsZero() {
		t.Errorf("RetryAfter %v RetryAt %v, want %v", rl.RetryAfter, rl.RetryAt, ratelimit.MaxRetryAfter)
	}
	if !strings.Contains(rl.Error(), "retry in 86400 seconds") {
		t.Errorf("error %q", rl.Error())
	}
}

// 10,000 unknown parameters gave a 516 KB error naming each: the error
// names the first few, cut short, and counts the rest.
func TestUnknownParametersNamedFewCountedRest(t *testing.T) {
	s := parseSpec(t, "pets", petDoc, "http://127.0.0.1:1")
	params := map[string]any{"petId": "1", strings.Repeat("n", 100<<10): 1}
	for i := range 10_000 {
		params[fmt.Sprintf("p%05d", i)] = i
	}
	_, err := New(Options{}).Prepare(t.Context(), endpoint(t, s, "getPet"), Args{Parameters: params})
	ae := asArgError(t, err)
	if len(ae.Problems) != 1 {
		t.Fatalf("problems %q, want one", ae.Problems)
	}
	got := ae.Problems[0]
	want := `unknown parameters "` + strings.Repeat("n", 64) + `…", "p00000", "p00001", "p00002", "p00003", "p00004", "p00005", "p00006", "p00007", "p00008" and 9991 more: not declared by this operation`
	if got != want {
		t.Errorf("problem\n%q, want\n%q", got, want)
	}
	if n := len(ae.Error()); n > 512 {
		t.Errorf("error is %d bytes", n)
	}
}

// A 10 GiB gzip bomb of NULs read to the cap was encoded whole as JSON
// ("\u0000" is six bytes) only to learn it did not fit: 343 MB allocated
// to render 8 MiB. A text body longer than the budget is previewed
// directly.
func TestNULTextBodyPreviewedWithoutEncodingWhole(t *testing.T) {
	a := &answer.Answer{Body: make([]byte, 8<<20), ContentType: "text/plain", Truncated: true}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	r, err := answer.Render(t.Context(), a, answer.RenderOptions{ResponseID: "r_x"})
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	if r.Shaped == nil || r.Shaped.Bytes != 8<<20 {
		t.Fatalf("shaped %+v, want a preview of 8 MiB", r.Shaped)
	}
	if out, _ := json.Marshal(r.Body); len(out) > answer.DefaultResultBytes {
		t.Errorf("body is %d bytes, over the %d budget", len(out), answer.DefaultResultBytes)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 4<<20 {
		t.Errorf("rendering allocated %d MB, want under 4", alloc>>20)
	}
}

// Preparing an operation (rebuilding it, fetching its external $refs,
// validating) ran outside the call's deadline: a first invoke could take
// as long as the schema cost. The endpoint's timeout now covers it: an
// external document that never answers ends the call at its deadline, and
// nothing is sent.
func TestPreparationUnderTheCallDeadline(t *testing.T) {
	up := newRecorder(t, nil)
	release := make(chan struct{})
	defer close(release)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/openapi.json":
			fmt.Fprintf(w, `{"openapi":"3.0.0","info":{"title":"t","version":"1"},"servers":[{"url":%q}],"paths":{"/a":{"post":{"operationId":"a",
			  "requestBody":{"content":{"application/json":{"schema":{"$ref":"slow.json#/X"}}}},
			  "responses":{"200":{"description":"ok"}}}}}}`, up.URL)
		case "/slow.json":
			select { // the external document never arrives
			case <-r.Context().Done():
			case <-release:
			}
		}
	}))
	defer srv.Close()
	s, err := spec.Load(t.Context(), srv.URL+"/openapi.json", spec.Options{Name: "t", AllowExternalRefs: true})
	if err != nil {
		t.Fatal(err)
	}
	g := &Governed{Client: New(Options{Timeout: 200 * time.Millisecond})}
	start := time.Now()
	_, err = g.Do(t.Context(), endpoint(t, s, "a"), Args{RequestBody: map[string]any{}}, CallOptions{})
	took := time.Since(start)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("err %v, want the deadline", err)
	}
	if took > 10*time.Second {
		t.Errorf("took %v past a 200ms deadline", took)
	}
	if up.count() != 0 {
		t.Error("the call was sent")
	}
}

// TestOverrideHeadersRefusedWhenSpelledWithUnderscores: "X_HTTP_METHOD_OVERRIDE"
// and "X_Forwarded_For" went upstream from the headers argument, and a CGI,
// WSGI, Rack or PHP server reads them as the very headers the deny-list
// refuses (HTTP_X_HTTP_METHOD_OVERRIDE): a read-only token's GET could be
// run as a DELETE. The checks read "_" as "-"; credentials too.
func TestOverrideHeadersRefusedWhenSpelledWithUnderscores(t *testing.T) {
	up := newRecorder(t, nil)
	s := parseSpec(t, "rn", reservedDoc, up.URL)
	c := reservedClient(false)
	for name, want := range map[string]string{
		"X_HTTP_METHOD_OVERRIDE": "changes how the upstream reads the request",
		"x_http_method":          "changes how the upstream reads the request",
		"X_Forwarded_For":        "changes how the upstream reads the request",
		"X_REAL_IP":              "changes how the upstream reads the request",
		"PROXY_AUTHORIZATION":    "credentials come from the config",
		"Transfer_Encoding":      "set by specgate",
		"Content_Type":           "use the contentType argument",
	} {
		t.Run(name, func(t *testing.T) {
			_, err := c.Prepare(t.Context(), endpoint(t, s, "q"), Args{Headers: map[string]string{name: "DELETE"}})
			ae := asArgError(t, err)
			if !strings.Contains(strings.Join(ae.Problems, "; "), want) {
				t.Errorf("problems %q, want %q", ae.Problems, want)
			}
		})
	}
	t.Run("an ordinary header with underscores still goes", func(t *testing.T) {
		call, err := c.Prepare(t.Context(), endpoint(t, s, "q"), Args{Headers: map[string]string{"X_Trace_Id": "abc"}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := call.Do(t.Context()); err != nil {
			t.Fatal(err)
		}
		if got := up.last(t).Header.Get("X_trace_id"); got != "abc" {
			t.Errorf("X_Trace_Id = %q, want abc", got)
		}
	})
}

// TestOneNameGivenTwiceIsRefused: a parameter named both bare and by its
// place ("filter" beside "query.filter"), or a header in two spellings
// ("X-Trace" beside "x_trace"), went out with one of the values silently
// winning, or with both. Neither is sent: the model is told to give it once.
func TestOneNameGivenTwiceIsRefused(t *testing.T) {
	up := newRecorder(t, nil)
	s := parseSpec(t, "rn", reservedDoc, up.URL)
	c := reservedClient(false)
	for name, args := range map[string]Args{
		"a parameter bare and by its place": {Parameters: map[string]any{
			"filter": map[string]any{"a": "1"}, "query.filter": map[string]any{"a": "2"}}},
		"a header in two cases":       {Headers: map[string]string{"X-Trace": "a", "x-trace": "b"}},
		"a header with an underscore": {Headers: map[string]string{"X-Trace": "a", "X_Trace": "b"}},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := c.Prepare(t.Context(), endpoint(t, s, "q"), args)
			ae := asArgError(t, err)
			if got := strings.Join(ae.Problems, "; "); !strings.Contains(got, "give it once") {
				t.Errorf("problems %q, want the name given twice", ae.Problems)
			}
		})
	}
	if n := up.count(); n != 0 {
		t.Errorf("the upstream got %d requests, want none", n)
	}
}
