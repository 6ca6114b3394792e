// Package spec loads OpenAPI 3.0, 3.1 and Swagger 2.0 descriptions into a
// catalog of endpoints, renders an endpoint's contract for a model
// (Endpoint.Describe, bounded in size) and caches derived catalogs on disk
// between starts (Cache).
//
// A loaded Spec keeps each operation as compact JSON (references intact) plus
// the components it may refer to, not kin-openapi's object graph: a 13 MB
// description costs about its own size in memory once loaded. The full
// kin-openapi operation, with references resolved, is rebuilt on demand by
// Endpoint.Operation and cached in a small bounded cache.
package spec

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Endpoint is one operation of a spec as the catalog knows it. The exported
// fields are read-only after load; an Endpoint is safe for concurrent use.
type Endpoint struct {
	// ID is stable across restarts: "<spec>.<operationId>", or
	// "<spec>.<method>_<path slug>" when the operation has no operationId.
	ID string `json:"id"`
	// Spec is the name of the spec the endpoint belongs to.
	Spec string `json:"spec"`
	// Method is the upper-case HTTP method.
	Method string `json:"method"`
	// Path is the path template exactly as the spec writes it.
	Path        string   `json:"path"`
	OperationID string   `json:"operationId,omitempty"`
	Summary     string   `json:"summary,omitempty"`
	Description string   `json:"description,omitempty"`
	Tags        []string `json:"tags,omitempty"`
	Deprecated  bool     `json:"deprecated,omitempty"`
	// BaseURL is the server URL requests go to: the configured base URL, else
	// the operation's, path item's or spec's first server with its variables
	// filled from their defaults. It may be empty when the spec names no
	// server and none is configured.
	BaseURL string `json:"baseUrl,omitempty"`
	// Params lists the operation's parameters, path-level ones merged in.
	Params []Param `json:"params,omitempty"`
	// BodyTypes lists the request body's media types in the order the spec
	// writes them; empty when the operation takes no body.
	BodyTypes []string `json:"bodyTypes,omitempty"`
	// BodyRequired reports whether the request body is required.
	BodyRequired bool `json:"bodyRequired,omitempty"`
	// Security lists the alternative security requirements that apply: each
	// inner slice names schemes that must all be satisfied. Nil means none.
	Security [][]string `json:"security,omitempty"`
	// About says what the success answer is, for search (see
	// ResponseAbout); filled at load.
	About string `json:"-"`
	// Glossary is what the spec's own text says of the operation's parts,
	// for search (see OwnWords); filled at load.
	Glossary string `json:"-"`

	// raw is the operation as JSON with path-level parameters merged in and
	// references left as "$ref".
	raw json.RawMessage
	// spec points back at the owning spec, for components and hydration.
	spec *Spec
}

// Param is a parameter as search and summaries need it; the full schema
// comes from Endpoint.Operation.
type Param struct {
	Name     string `json:"name"`
	In       string `json:"in"`
	Required bool   `json:"required,omitempty"`
}

// RateLimitCost is the operation's x-ratelimit-cost: how many units of a
// requests budget one call charges, 1..1000; zero when the operation does
// not say (or says something else than a whole number in that range).
func (e *Endpoint) RateLimitCost() int {
	if !bytes.Contains(e.raw, []byte(`"x-ratelimit-cost"`)) {
		return 0
	}
	var op struct {
		Cost json.Number `json:"x-ratelimit-cost"`
	}
	if json.Unmarshal(e.raw, &op) != nil {
		return 0
	}
	n, err := strconv.Atoi(strings.TrimSpace(op.Cost.String()))
	if err != nil || n < 1 || n > 1000 {
		return 0
	}
	return n
}

// Idempotent reports whether the method is idempotent by HTTP semantics.
func (e *Endpoint) Idempotent() bool {
	switch e.Method {
	case "GET", "HEAD", "OPTIONS", "PUT", "DELETE", "TRACE":
		return true
	}
	return false
}

// Safe reports whether the method is GET, HEAD or OPTIONS, which change
// nothing: what read_only curation serves and a script may call without
// scripts.allow_writes.
func (e *Endpoint) Safe() bool { return safeMethod(e.Method) }

// Owner returns the loaded spec the endpoint belongs to (its security
// schemes, servers and components); the field Spec is only its name. Owner
// is nil for an Endpoint not built by this package.
func (e *Endpoint) Owner() *Spec { return e.spec }

// RawOperation returns the operation as compact JSON with references kept.
func (e *Endpoint) RawOperation() json.RawMessage { return e.raw }

// ParamNames returns the parameter names in spec order.
func (e *Endpoint) ParamNames() []string {
	names := make([]string, len(e.Params))
	for i, p := range e.Params {
		names[i] = p.Name
	}
	return names
}

// slugID builds the id tail for an operation without an operationId:
// lower-case method, then the path with every run of characters other than
// letters and digits turned into one underscore ("GET /api/v3/ticker/price"
// gives "get_api_v3_ticker_price").
func slugID(method, path string) string {
	var b strings.Builder
	b.WriteString(strings.ToLower(method))
	pending := true
	for _, r := range path {
		if r < 128 && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			if pending {
				b.WriteByte('_')
				pending = false
			}
			b.WriteRune(r)
			continue
		}
		if r == '{' || r == '}' {
			// Template braces separate words like any other punctuation.
			pending = true
			continue
		}
		if r >= 128 && idRune(r) {
			if pending {
				b.WriteByte('_')
				pending = false
			}
			b.WriteRune(r)
			continue
		}
		pending = true
	}
	return b.String()
}

// cleanOperationID makes an operationId usable in an id: each run of
// characters idRune refuses becomes one underscore, as slugID treats a
// path, and none leads or trails. An id reaches logs, configs and shells
// (the audit log, init's comments, a script's code), so a hostile spec's
// "ping$(touch${IFS}PWNED)" must come out as "ping_touch_IFS_PWNED".
// "" when nothing is left: the caller slugs the method and path instead.
func cleanOperationID(op string) string {
	var b strings.Builder
	pending := false
	for _, r := range op {
		if !idRune(r) {
			pending = true
			continue
		}
		if pending && b.Len() > 0 {
			b.WriteByte('_')
		}
		pending = false
		b.WriteRune(r)
	}
	return b.String()
}

// idRune reports whether r may stand in an endpoint id as it is: a letter
// or digit, or the punctuation real operationIds use (GitHub's
// "repos/list-for-org", Box's "post_oauth2_token#refresh" and
// "levels:append", dotted "pets.list"). None of these quotes, expands,
// separates or redirects in a shell, and none is a space, a control or a
// format character ('~' is left out: a shell expands it after ':').
func idRune(r rune) bool {
	if r < utf8.RuneSelf {
		return 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || strings.ContainsRune("_-./:#", r)
	}
	return unicode.IsLetter(r) || unicode.IsDigit(r)
}
