package invoke

import (
	"strings"
	"testing"
)

// credParamDoc declares credentials as required parameters as well as
// security schemes, as some specs do.
const credParamDoc = `{"openapi":"3.0.3","info":{"title":"cp","version":"1"},
 "components":{"securitySchemes":{
   "bearer":{"type":"http","scheme":"bearer"},
   "hdr":{"type":"apiKey","in":"header","name":"X-Api-Key"},
   "qry":{"type":"apiKey","in":"query","name":"appid"},
   "ck":{"type":"apiKey","in":"cookie","name":"sid"}
 }},
 "paths":{
  "/bearer":{"get":{"operationId":"bearer","security":[{"bearer":[]}],"parameters":[
     {"name":"Authorization","in":"header","required":true,"schema":{"type":"string","pattern":"^Bearer .+"}},
     {"name":"q","in":"query","schema":{"type":"string"}}],"responses":{"200":{"description":"ok"}}}},
  "/key":{"get":{"operationId":"key","security":[{"hdr":[]}],"parameters":[
     {"name":"x-api-key","in":"header","required":true,"schema":{"type":"string","minLength":30}}],"responses":{"200":{"description":"ok"}}}},
  "/qkey":{"get":{"operationId":"qkey","security":[{"qry":[]}],"parameters":[
     {"name":"city","in":"query","schema":{"type":"string"}},
     {"name":"appid","in":"query","required":true,"schema":{"type":"string"}}],"responses":{"200":{"description":"ok"}}}},
  "/ckey":{"get":{"operationId":"ckey","security":[{"ck":[]}],"parameters":[
     {"name":"theme","in":"cookie","schema":{"type":"string"}},
     {"name":"sid","in":"cookie","required":true,"schema":{"type":"string"}}],"responses":{"200":{"description":"ok"}}}},
  "/either":{"get":{"operationId":"either","security":[{"bearer":[]},{"hdr":[]}],"parameters":[
     {"name":"Authorization","in":"header","required":true,"schema":{"type":"string"}}],"responses":{"200":{"description":"ok"}}}},
  "/static":{"get":{"operationId":"static","parameters":[
     {"name":"X-Static-Key","in":"header","required":true,"schema":{"type":"string"}}],"responses":{"200":{"description":"ok"}}}}
 }}`

// A required credential parameter is filled by the configured credential,
// which is applied after validation and never shown; without one, the
// model gives it as before.
func TestRequiredCredentialParameters(t *testing.T) {
	up := newRecorder(t, nil)
	s := parseSpec(t, "cp", credParamDoc, up.URL)
	configured := New(Options{Specs: map[string]SpecOptions{"cp": {
		Headers: map[string]string{staticName: secStatic},
		Auth: map[string]Credential{
			"bearer": {Token: secBearer},
			"hdr":    {Value: secHeader},
			"qry":    {Value: secQuery},
			"ck":     {Value: secCookie},
		},
	}}})
	onlyKey := New(Options{Specs: map[string]SpecOptions{"cp": {Auth: map[string]Credential{"hdr": {Value: secHeader}}}}})
	missingEnv := New(Options{Specs: map[string]SpecOptions{"cp": {Auth: map[string]Credential{"bearer": {MissingEnv: []string{"CP_TOKEN"}}}}}})
	none := New(Options{})

	tests := []struct {
		name    string
		c       *Client
		op      string
		params  map[string]any
		headers map[string]string
		wantErr string // a problem the ArgError must list; "" for success
		check   func(t *testing.T, r recorded)
	}{
		{name: "bearer fills Authorization", c: configured, op: "bearer", params: map[string]any{"q": "x"},
			check: func(t *testing.T, r recorded) {
				if got := r.Header.Values("Authorization"); len(got) != 1 || got[0] != "Bearer "+secBearer || r.RawQuery != "q=x" {
					t.Errorf("authorization %q query %q", got, r.RawQuery)
				}
			}},
		{name: "the model's Authorization parameter is dropped", c: configured, op: "bearer", params: map[string]any{"Authorization": "Bearer mine"},
			check: func(t *testing.T, r recorded) {
				if got := r.Header.Values("Authorization"); len(got) != 1 || got[0] != "Bearer "+secBearer {
					t.Errorf("authorization %q", got)
				}
			}},
		{name: "the model's Authorization header is dropped", c: configured, op: "bearer", headers: map[string]string{"authorization": "Bearer mine"},
			check: func(t *testing.T, r recorded) {
				if got := r.Header.Values("Authorization"); len(got) != 1 || got[0] != "Bearer "+secBearer {
					t.Errorf("authorization %q", got)
				}
			}},
		{name: "api key header fills its parameter, in any case", c: configured, op: "key",
			check: func(t *testing.T, r recorded) {
				if got := r.Header.Values("X-Api-Key"); len(got) != 1 || got[0] != secHeader {
					t.Errorf("x-api-key %q", got)
				}
			}},
		{name: "api key in the query fills its parameter, sent once", c: configured, op: "qkey", params: map[string]any{"city": "Paris", "appid": "mine"},
			check: func(t *testing.T, r recorded) {
				if r.RawQuery != "city=Paris&appid="+secQuery {
					t.Errorf("query %q", r.RawQuery)
				}
			}},
		{name: "api key cookie fills its parameter, sent once", c: configured, op: "ckey", params: map[string]any{"theme": "dark"},
			check: func(t *testing.T, r recorded) {
				if got := r.Header.Values("Cookie"); len(got) != 1 || got[0] != "theme=dark; sid="+secCookie {
					t.Errorf("cookie %q", got)
				}
			}},
		{name: "static header fills its parameter", c: configured, op: "static",
			check: func(t *testing.T, r recorded) {
				if got := r.Header.Values(staticName); len(got) != 1 || got[0] != secStatic {
					t.Errorf("%s %q", staticName, got)
				}
			}},
		{name: "a credential for another header does not fill Authorization", c: onlyKey, op: "either",
			wantErr: `parameter "Authorization" (header): is required`},
		{name: "an unusable credential fills nothing", c: missingEnv, op: "bearer",
			wantErr: `parameter "Authorization" (header): is required`},
		{name: "no credentials: the model must give it", c: none, op: "bearer",
			wantErr: `parameter "Authorization" (header): is required`},
		{name: "no credentials: the model's value is validated", c: none, op: "bearer", params: map[string]any{"Authorization": "Token mine"},
			wantErr: `parameter "Authorization" (header)`},
		{name: "no credentials: the model's value is sent", c: none, op: "bearer", params: map[string]any{"Authorization": "Bearer mine"},
			check: func(t *testing.T, r recorded) {
				if got := r.Header.Values("Authorization"); len(got) != 1 || got[0] != "Bearer mine" {
					t.Errorf("authorization %q", got)
				}
			}},
		{name: "no credentials: a declared header given as a header counts", c: none, op: "key", headers: map[string]string{"X-API-KEY": strings.Repeat("k", 30)},
			check: func(t *testing.T, r recorded) {
				if got := r.Header.Values("X-Api-Key"); len(got) != 1 || got[0] != strings.Repeat("k", 30) {
					t.Errorf("x-api-key %q", got)
				}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := up.count()
			call, err := tt.c.Prepare(t.Context(), endpoint(t, s, tt.op), Args{Parameters: tt.params, Headers: tt.headers})
			if tt.wantErr != "" {
				ae := asArgError(t, err)
				found := false
				for _, p := range ae.Problems {
					found = found || strings.HasPrefix(p, tt.wantErr)
				}
				if !found {
					t.Errorf("problems %q, want %q", ae.Problems, tt.wantErr)
				}
				for _, sec := range allSecrets {
					if strings.Contains(ae.Error(), sec) {
						t.Errorf("secret in %q", ae.Error())
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !call.Validated() {
				t.Error("not validated")
			}
			// The credential is not part of the prepared call: it is applied
			// when sending.
			for name, vs := range call.header {
				for _, v := range vs {
					for _, sec := range allSecrets {
						if strings.Contains(v, sec) {
							t.Errorf("secret in prepared header %s", name)
						}
					}
				}
			}
			if _, err := call.Do(t.Context()); err != nil {
				t.Fatal(err)
			}
			if up.count() != before+1 {
				t.Fatalf("%d requests", up.count()-before)
			}
			tt.check(t, up.last(t))
		})
	}
}

// slackDoc is Slack's shape: an OAuth2 scheme with no client-credentials
// flow, and the same token declared again as a required "token" header.
const slackDoc = `{"openapi":"3.0.3","info":{"title":"slack","version":"1"},
 "components":{"securitySchemes":{"slackAuth":{"type":"oauth2","flows":{"authorizationCode":{
   "authorizationUrl":"https://slack.com/oauth/authorize","tokenUrl":"https://slack.com/api/oauth.access","scopes":{}}}}}},
 "paths":{"/users.list":{"get":{"operationId":"users_list","security":[{"slackAuth":[]}],"parameters":[
   {"name":"token","in":"header","required":true,"schema":{"type":"string"}},
   {"name":"limit","in":"query","schema":{"type":"integer"}}],"responses":{"200":{"description":"ok"}}}}}}`

// Slack's every method failed "header token: is required" with a
// pre-issued token configured (issue 33 item 4): the configured token fills
// the declared parameter, goes in Authorization, and the model is not
// asked for it.
func TestConfiguredTokenFillsADeclaredTokenParameter(t *testing.T) {
	up := newRecorder(t, nil)
	s := parseSpec(t, "slack", slackDoc, up.URL)
	e := endpoint(t, s, "users_list")
	tests := []struct {
		name       string
		cred       map[string]Credential
		wantFilled bool
	}{
		{"a pre-issued token", map[string]Credential{"slackAuth": {Token: "xoxb-secret"}}, true},
		{"no credential", nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := New(Options{Specs: map[string]SpecOptions{"slack": {Auth: tt.cred}}})
			filled := c.ConfigFilled(t.Context(), e)
			if got := filled["header\x00token"]; got != tt.wantFilled {
				t.Fatalf("filled %v, want %v", filled, tt.wantFilled)
			}
			call, err := c.Prepare(t.Context(), e, Args{Parameters: map[string]any{"limit": 2}})
			if !tt.wantFilled {
				if err == nil || !strings.Contains(err.Error(), "token") {
					t.Fatalf("got %v, want the token asked for", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if _, err := call.Do(t.Context()); err != nil {
				t.Fatal(err)
			}
			r := up.last(t)
			// The declared token header carries the same token: an
			// upstream that checks it (a validating mock) finds it.
			if r.Header.Get("Authorization") != "Bearer xoxb-secret" || r.Header.Get("Token") != "xoxb-secret" {
				t.Errorf("sent Authorization %q, token %q", r.Header.Get("Authorization"), r.Header.Get("Token"))
			}
		})
	}
}
