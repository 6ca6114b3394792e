package invoke

import (
	"context"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/specgate/specgate/pkg/serialize"
	"github.com/specgate/specgate/pkg/spec"
)

// sendKind is what one auth step puts on a request.
type sendKind int

const (
	sendAPIKey            sendKind = iota + 1 // a key in a header, query parameter or cookie
	sendBasic                                 // Authorization: Basic
	sendAuthorization                         // Authorization: <scheme> <token>
	sendClientCredentials                     // Authorization: Bearer, a token got by OAuth2 client credentials
)

// authStep applies one security scheme's credential to a request.
type authStep struct {
	scheme   string // the securitySchemes name
	kind     sendKind
	in       string // sendAPIKey: header, query or cookie
	name     string // sendAPIKey: the header, query or cookie name; sendAuthorization: the auth scheme
	cred     Credential
	tokenURL string // sendClientCredentials
}

// carries returns where the step's credential goes: a query key, a cookie name, or a
// header (canonical); one of them is set.
func (s authStep) carries() (query, cookie, header string) {
	switch {
	case s.kind == sendAPIKey && s.in == "query":
		return s.name, "", ""
	case s.kind == sendAPIKey && s.in == "cookie":
		return "", s.name, ""
	case s.kind == sendAPIKey:
		return "", "", http.CanonicalHeaderKey(s.name)
	}
	return "", "", "Authorization"
}

// authPlan is the credentials a call sends, chosen at Prepare.
type authPlan struct {
	spec  string
	steps []authStep
	// needed names a scheme the call declares but nothing is configured
	// for; an upstream 401 then becomes an AuthError naming its key.
	needed, neededKey string
	// sent records the OAuth2 access tokens the call sent; nil when it
	// uses no oauth2 step.
	sent *sentTokens
}

func (p authPlan) headerNames() []string {
	var out []string
	for _, s := range p.steps {
		switch _, cookie, header := s.carries(); {
		case header != "":
			out = append(out, header)
		case cookie != "":
			out = append(out, "Cookie")
		}
	}
	return out
}

func (p authPlan) usesOAuth() bool {
	for _, s := range p.steps {
		if s.kind == sendClientCredentials {
			return true
		}
	}
	return false
}

// configKey names the config key a scheme's credential lives under.
func configKey(specName, scheme string, sch spec.SecurityScheme) string {
	return "specs[" + specName + "].auth." + scheme + "." + sch.Kind().CredentialField()
}

// stepFor builds the step for one scheme, or reports why it cannot.
func stepFor(sch spec.SecurityScheme, name string, cred Credential, configured bool) (authStep, bool) {
	if !configured || len(cred.MissingEnv) > 0 {
		return authStep{}, false
	}
	st := authStep{scheme: name, cred: cred}
	kind := sch.Kind()
	switch kind {
	case spec.SchemeAPIKey:
		if cred.Value == "" || sch.Name == "" {
			return st, false
		}
		switch sch.In {
		case "header", "query", "cookie":
		default:
			return st, false
		}
		st.kind, st.in, st.name = sendAPIKey, sch.In, sch.Name
	case spec.SchemeBasic:
		if cred.Username == "" && cred.Password == "" {
			return st, false
		}
		st.kind = sendBasic
	case spec.SchemeToken:
		tok := cred.Token
		if tok == "" {
			tok = cred.Value
		}
		if tok == "" {
			return st, false
		}
		st.cred.Token = tok
		st.kind = sendAuthorization
		st.name = "Bearer"
		if sch.Scheme != "" && !strings.EqualFold(sch.Scheme, "bearer") {
			st.name = sch.Scheme
		}
	case spec.SchemeOAuth2, spec.SchemeOpenID:
		if cred.Token != "" {
			st.kind, st.name = sendAuthorization, "Bearer"
			return st, true
		}
		if kind != spec.SchemeOAuth2 || cred.ClientID == "" || cred.ClientSecret == "" {
			return st, false
		}
		st.kind = sendClientCredentials
		st.tokenURL = cred.TokenURL
		if st.tokenURL == "" {
			st.tokenURL = sch.TokenURL
		}
		if st.tokenURL == "" {
			return st, false
		}
	default:
		return st, false
	}
	return st, true
}

// planAuth chooses the first security alternative whose schemes all have
// credentials. With none: an empty alternative, or nothing configured,
// sends the call without credentials (an upstream 401 then names the key
// to set); a credential whose ${ENV} is unset is an AuthError now, before
// the call costs any rate-limit budget.
func (c *Client) planAuth(ctx context.Context, e *spec.Endpoint) (authPlan, error) {
	plan := authPlan{spec: e.Spec}
	if len(e.Security) == 0 {
		return plan, nil
	}
	s := e.Owner()
	var schemes map[string]spec.SecurityScheme
	if s != nil {
		schemes = s.Schemes
	}
	creds := c.specOptions(e.Spec).Auth
	anonymous := false
	var missing *AuthError
	for _, alt := range e.Security {
		if len(alt) == 0 {
			anonymous = true
			continue
		}
		var steps []authStep
		ok := true
		for _, name := range alt {
			sch, known := schemes[name]
			cred, configured := creds[name]
			if configured {
				var ok bool
				if cred, ok = cred.forPrincipal(ctx); !ok {
					p, _ := PrincipalFrom(ctx)
					return plan, &AuthError{Spec: e.Spec, Scheme: name, Key: "specs[" + e.Spec + "].auth." + name + ".by_principal",
						Reason: "no credential is configured for principal " + principalName(p) + " and there is no default"}
				}
			}
			st, usable := stepFor(sch, name, cred, configured && known)
			if !usable {
				ok = false
				if missing == nil && configured && len(cred.MissingEnv) > 0 {
					missing = &AuthError{Spec: e.Spec, Scheme: name, Key: configKey(e.Spec, name, sch), EnvVars: slices.Clone(cred.MissingEnv)}
				}
				if plan.needed == "" && known {
					plan.needed, plan.neededKey = name, configKey(e.Spec, name, sch)
				}
				continue
			}
			steps = append(steps, st)
		}
		if ok {
			plan.steps = steps
			plan.needed, plan.neededKey = "", ""
			if plan.usesOAuth() {
				plan.sent = &sentTokens{}
			}
			return plan, nil
		}
	}
	if anonymous {
		plan.needed, plan.neededKey = "", ""
		return plan, nil
	}
	if missing != nil {
		return plan, missing
	}
	return plan, nil
}

// applyAuth sets the plan's credentials on req (bound for the call's own
// host: auth is never applied anywhere else).
func (c *Call) applyAuth(ctx context.Context, req *http.Request, hc *http.Client) error {
	for _, st := range c.auth.steps {
		switch st.kind {
		case sendAPIKey:
			switch st.in {
			case "header":
				req.Header.Set(st.name, st.cred.Value)
			case "query":
				q := req.URL.RawQuery
				if q != "" {
					q += "&"
				}
				req.URL.RawQuery = q + serialize.EscapeQuery(st.name) + "=" + serialize.EscapeQuery(st.cred.Value)
			case "cookie":
				ck := serialize.EscapeCookie(st.name) + "=" + serialize.EscapeCookie(st.cred.Value)
				if old := req.Header.Get("Cookie"); old != "" {
					ck = old + "; " + ck
				}
				req.Header.Set("Cookie", ck)
			}
		case sendBasic:
			req.SetBasicAuth(st.cred.Username, st.cred.Password)
		case sendAuthorization:
			req.Header.Set("Authorization", st.name+" "+st.cred.Token)
			c.fillTokenParams(req, st.cred.Token)
		case sendClientCredentials:
			key, tok, err := c.c.tokens.get(ctx, hc, c.endpoint.Spec, st, c.endpoint.BaseURL)
			if err != nil {
				return err
			}
			c.auth.sent.add(key, tok)
			req.Header.Set("Authorization", "Bearer "+tok)
			c.fillTokenParams(req, tok)
		}
	}
	// Static headers come from the config and win over the model's values.
	for name, v := range c.c.specOptions(c.endpoint.Spec).Headers {
		req.Header.Set(name, v)
	}
	return nil
}

// fillTokenParams sends the bearer token in a declared token header too
// (Slack declares its OAuth token again as a required "token" header):
// configSupplied counts that parameter filled, so the model is not asked
// for it, and an upstream that checks it finds it.
func (c *Call) fillTokenParams(req *http.Request, tok string) {
	params := paramsFromEndpoint(c.endpoint)
	for _, name := range tokenParamNames {
		if p := findHeaderParam(params, name); p != nil {
			req.Header.Set(p.Name, tok)
		}
	}
}

// secrets returns every credential and static header value configured for
// the call's spec, in every form it may be sent or echoed in (see
// secretForms), longest first, for redaction.
func (c *Call) secrets() []string {
	so := c.c.specOptions(c.endpoint.Spec)
	var raw []string
	add := func(s string) {
		if len(s) >= 4 {
			raw = append(raw, s)
		}
	}
	var all []Credential
	for _, cr := range so.Auth {
		all = append(all, cr)
		for _, e := range cr.ByPrincipal {
			all = append(all, e.Credential)
		}
	}
	for _, cr := range all {
		add(cr.Value)
		add(cr.Token)
		add(cr.Password)
		add(cr.ClientSecret)
		if cr.Username != "" && cr.Password == "" {
			add(cr.Username) // an API key sent as the basic user (Stripe)
		}
		if cr.Username != "" || cr.Password != "" {
			add(cr.Username + ":" + cr.Password) // its base64 forms are what basic auth sends
		}
		if cr.ClientSecret != "" {
			add(url.QueryEscape(cr.ClientID) + ":" + url.QueryEscape(cr.ClientSecret))
		}
	}
	for _, v := range so.Headers {
		add(v)
		if _, after, ok := strings.Cut(v, " "); ok {
			add(after) // "Bearer <token>": the token alone
		}
	}
	for _, t := range c.c.tokens.values(c.endpoint.Spec) {
		add(t)
	}
	for _, t := range c.auth.sent.list() {
		add(t.value) // it may have left the cache since
	}
	return secretForms(raw)
}

func principalName(p Principal) string {
	if p.Subject == "" {
		return "(anonymous)"
	}
	if p.Org == "" {
		return p.Subject
	}
	return p.Subject + "@" + p.Org
}
