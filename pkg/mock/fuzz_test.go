package mock

import (
	"bytes"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/specgate/specgate/pkg/spec"
)

// FuzzServeHTTP sends the mock requests the spec does not describe: any
// method, path, query, content type and body. It must answer each with a
// status it documents or a 4xx, never by recovering from a panic.
func FuzzServeHTTP(f *testing.F) {
	for _, seed := range []struct{ method, target, ctype, body string }{
		{"GET", "/api/v3/pet/1", "", ""},
		{"GET", "/api/v3/pet/findByStatus?status=sold&status=x", "", ""},
		{"POST", "/api/v3/pet", "application/json", `{"name":"rex","photoUrls":[]}`},
		{"PUT", "/api/v3/pet", "application/xml", `<pet><name>rex</name></pet>`},
		{"POST", "/api/v3/pet/1?name=a&status=b", "application/x-www-form-urlencoded", "a=%zz"},
		{"POST", "/api/v3/pet/1/uploadImage", "application/octet-stream", "\x00\x01"},
		{"GET", "/api/v3/user/login?username=%00&password=", "", ""},
		{"DELETE", "/api/v3/store/order/-1", "", ""},
		{"GET", "/v2/things/not-a-uuid", "", ""},
		{"POST", "/v2/things", "application/json", `{"kind":"box","shape":{"side":1,"radius":2}}`},
		{"GET", "/v2/things?limit=1e400", "", ""},
		{"OPTIONS", "/%2e%2e/api/v3//pet/", "", ""},
	} {
		f.Add(seed.method, seed.target, seed.ctype, seed.body)
	}
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	var mocks []*Server
	for _, s := range []*spec.Spec{loadSpec(f, petstore), parseSpec(f, thingsSpec)} {
		m, err := New(s, Options{Logger: log})
		if err != nil {
			f.Fatal(err)
		}
		mocks = append(mocks, m)
	}
	f.Fuzz(func(t *testing.T, method, target, ctype, body string) {
		if !validMethod(method) || !strings.HasPrefix(target, "/") {
			return
		}
		for _, m := range mocks {
			req, err := http.NewRequest(method, "http://mock.test"+target, strings.NewReader(body))
			if err != nil {
				return
			}
			if ctype != "" {
				req.Header.Set("Content-Type", ctype)
			}
			logs.Reset()
			w := httptest.NewRecorder()
			m.ServeHTTP(w, req)
			if w.Code >= 500 || strings.Contains(logs.String(), "mock answer failed") {
				t.Fatalf("%s %s (%q, %q) = %d: %s\n%s", method, target, ctype, body, w.Code, w.Body.Bytes(), logs.String())
			}
		}
	})
}

// validMethod reports whether m is an HTTP token, as net/http requires.
func validMethod(m string) bool {
	if m == "" {
		return false
	}
	for _, c := range m {
		if c <= ' ' || c >= 0x7f || strings.ContainsRune(`()<>@,;:\"/[]?={}`, c) {
			return false
		}
	}
	return true
}
