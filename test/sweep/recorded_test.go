package sweep

import (
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/specgate/specgate/pkg/spec"
)

// wireCheck says what is wrong with the request a sampled call put on the
// wire, "" when nothing is: the recorded specs' stand-in for Prism's
// validation, checked against the API's own documented encoding.
type wireCheck func(e *spec.Endpoint, params map[string]any, x *exchange) string

// recorded are the specs Prism cannot serve, called against the recording
// upstream instead.
var recorded = map[string]wireCheck{
	// Prism had not started on Stripe's 4 MB after 2 minutes.
	"stripe": stripeWire,
	// Prism resolves the $ref data fields inside GitHub's SCIM examples as
	// references and fails fetching https://api.github.com/scim/... (the
	// larger github-full has no such example and serves).
	"github-rest": plainWire,
	// A $ref to /components/schemas/petdetails#pet_details_id, a file path:
	// Prism stops with ENOENT (specgate warns and serves).
	"petstore-v31": plainWire,
	// Broken $refs to schemas the file does not have: Prism stops with
	// ENOENT (specgate warns, and leaves out the operations that need them).
	"spotify": plainWire,
}

// plainWire checks what any API expects: the method, every path parameter
// filled, every query parameter sent under its name, and a body in the
// content type it was sent as.
func plainWire(e *spec.Endpoint, params map[string]any, x *exchange) string {
	if x.method != e.Method {
		return fmt.Sprintf("sent %s, want %s", x.method, e.Method)
	}
	u, err := url.Parse(x.uri)
	if err != nil {
		return err.Error()
	}
	if strings.ContainsAny(u.Path, "{}") {
		return "path template not filled: " + u.Path
	}
	q := u.Query()
	for _, p := range e.Params {
		if _, ok := params[p.Name]; ok && p.In == "query" && !q.Has(p.Name) && !strings.Contains(u.RawQuery, url.QueryEscape(p.Name)+"%5B") && !strings.Contains(u.RawQuery, p.Name+"[") {
			if _, obj := params[p.Name].(map[string]any); !obj {
				return "query parameter " + p.Name + " not sent: " + u.RawQuery
			}
		}
	}
	if len(x.body) > 0 && x.contentType == "" {
		return "a body without a Content-Type"
	}
	return ""
}

// stripeWire checks Stripe's documented encoding
// (https://docs.stripe.com/api/request): list and object query parameters
// in brackets (expand[]=a or expand[0]=a, created[gt]=1), bodies as
// application/x-www-form-urlencoded with the same brackets, and every path
// parameter filled.
func stripeWire(e *spec.Endpoint, params map[string]any, x *exchange) string {
	if x.method != e.Method {
		return fmt.Sprintf("sent %s, want %s", x.method, e.Method)
	}
	u, err := url.Parse(x.uri)
	if err != nil {
		return err.Error()
	}
	if strings.ContainsAny(u.Path, "{}") {
		return "path template not filled: " + u.Path
	}
	q := u.Query()
	for _, p := range e.Params {
		v, ok := params[p.Name]
		if !ok || p.In != "query" {
			continue
		}
		if why := bracketed(q, p.Name, v); why != "" {
			return "query: " + why
		}
	}
	if len(x.body) > 0 {
		if !strings.HasPrefix(x.contentType, "application/x-www-form-urlencoded") {
			return "body sent as " + x.contentType + ", want application/x-www-form-urlencoded"
		}
		if _, err := url.ParseQuery(string(x.body)); err != nil {
			return "form body does not parse: " + err.Error()
		}
	}
	return ""
}

// bracketed checks that v went out under name in Stripe's bracket form.
func bracketed(q url.Values, name string, v any) string {
	switch v := v.(type) {
	case []any:
		for i, item := range v {
			want := text(item)
			if !slices.Contains(q[name+"[]"], want) && !slices.Contains(q[fmt.Sprintf("%s[%d]", name, i)], want) {
				return fmt.Sprintf("%s[]=%s missing from %s", name, want, q.Encode())
			}
		}
	case map[string]any:
		for k, item := range v {
			if why := bracketed(q, name+"["+k+"]", item); why != "" {
				return why
			}
		}
	default:
		if want := text(v); !slices.Contains(q[name], want) {
			return fmt.Sprintf("%s=%s missing from %s", name, want, q.Encode())
		}
	}
	return ""
}

// text is a JSON scalar as it reads in a query string.
func text(v any) string {
	if f, ok := v.(float64); ok {
		return strconv.FormatFloat(f, 'f', -1, 64)
	}
	return fmt.Sprint(v)
}
