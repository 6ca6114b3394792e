package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/specgate/specgate/pkg/spec"
)

// cmdInit writes a commented config for one spec: `specgate check` loads
// it as written.
func cmdInit(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	c := newFlags("init", stdout, stderr)
	var out, name string
	var force bool
	c.str(&out, "out", "", "write the config to `FILE` instead of stdout")
	c.boolean(&force, "force", false, "overwrite --out if it exists")
	c.str(&name, "name", "", "the spec's `NAME`, which endpoint ids start with (default: from the file name)")
	// init took every serve flag once, to no effect; they still parse.
	c.hide(func() {
		var unused string
		var off bool
		c.str(&unused, "config", "", "")
		c.value(&c.specs, "spec", "")
		c.str(&unused, "base-url", "", "")
		c.boolean(&off, "read-only", false, "")
		c.boolean(&off, "no-cache", false, "")
		c.governFlags()
		c.logFlags("info")
	})
	rest, err := c.parse(args)
	if err != nil {
		return err
	}
	if len(rest) != 1 {
		return c.usageError("one SPEC|URL is needed")
	}
	location := rest[0]
	s, err := spec.Load(ctx, location, spec.Options{Name: name})
	if err != nil {
		return err
	}
	if out == "" {
		_, err := io.WriteString(stdout, initConfig(s, location, name != ""))
		return err
	}
	written := location
	if !isURL(location) {
		if written, err = relativeTo(filepath.Dir(out), location); err != nil {
			return err
		}
	}
	if err := writeNew(out, initConfig(s, written, name != ""), force); err != nil {
		return err
	}
	return writeSchemaBeside(out, force)
}

func isURL(s string) bool {
	return strings.HasPrefix(s, "http://") || strings.HasPrefix(s, "https://")
}

// relativeTo rewrites a spec path so it still names the same file when read
// relative to the config's directory (as config.Load does).
func relativeTo(dir, path string) (string, error) {
	absPath, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	absDir, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	// A path that climbs out of the config's directory reads better whole.
	if rel, err := filepath.Rel(absDir, absPath); err == nil && !strings.HasPrefix(rel, "..") {
		return rel, nil
	}
	return absPath, nil
}

// writeNew writes data to path, refusing to replace a file unless force.
func writeNew(path, data string, force bool) error {
	flags := os.O_WRONLY | os.O_CREATE | os.O_EXCL
	if force {
		flags = os.O_WRONLY | os.O_CREATE | os.O_TRUNC
	}
	f, err := os.OpenFile(path, flags, 0o600)
	if errors.Is(err, os.ErrExist) {
		return fmt.Errorf("%s exists: pass --force to overwrite it", path)
	}
	if err != nil {
		return fmt.Errorf("cannot write %s: %w", path, errors.Unwrap(err))
	}
	_, err = f.WriteString(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

// safeBudget is the commented default proposed when a spec states no limit.
const (
	safeRequests = 60
	safeWindow   = time.Minute
)

// initConfig renders the config for s, found at location.
func initConfig(s *spec.Spec, location string, named bool) string {
	name := configSpecName(s.Name)
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	title := oneLineText(s.Title)
	if title == "" {
		title = name
	}
	// the schema gives editors completion and each key's documentation on hover
	w("# yaml-language-server: $schema=%s\n", schemaFile)
	w("# specgate config for %s (%s), written by `specgate init`.\n", title, oneLineText(formatName(s.Version)))
	w("# Check it with `specgate check --config FILE`; serve it with `specgate serve --config FILE`.\n")
	w("# Every key, its default and why: config.example.yaml.\n\n")
	w("specs:\n")
	w("  - # Endpoint ids start with it: %s.<operationId>.\n", oneLineText(name))
	w("    name: %s\n", yamlLiteral(name))
	w("    location: %s\n", yamlLiteral(location))

	host := ""
	switch u, err := url.Parse(s.BaseURL); {
	case s.BaseURL == "" || err != nil || !u.IsAbs():
		w("    # The spec's server is %s: calls need an absolute base URL.\n", oneLineText(describeServer(s.BaseURL)))
		w("    # Set %s (e.g. https://api.example.com%s) or write the URL here.\n", envName(name, "base_url"), oneLineText(serverPath(s.BaseURL)))
		w("    base_url: %s\n", yamlString("${"+envName(name, "base_url")+"}"))
	default:
		host = u.Hostname()
		w("    # Calls go to %s (the spec's first server); base_url overrides it.\n", oneLineText(s.BaseURL))
	}
	group := ""
	if host == "" {
		group = name
		w("    # Budgets below are keyed on this group, as the host is not known yet.\n")
		w("    upstream: %s\n", yamlLiteral(group))
	}
	w("    # Per-endpoint cooldown: another call to the same endpoint within this\n")
	w("    # interval is refused with rate_limit and told how long to wait.\n")
	w("    rate_limit_interval: \"10s\"\n")

	api := apiName(s, name)
	if named {
		api = envName(name)
	}
	writeAuth(&b, s, api)

	match := host
	if match == "" {
		match = group
	}
	w("\n")
	if l := s.StatedLimit; l != nil {
		w("# Upstream budget: the spec states %d requests per %s (%s: %s).\n", l.Requests, formatWindow(l.Window), oneLineText(l.Source), oneLineText(l.Text))
		w("upstreams:\n")
		w("  - match: %s\n", yamlLiteral(match))
		w("    requests_per_window: %d\n", l.Requests)
		w("    window: %s\n", yamlString(formatWindow(l.Window)))
		w("    on_limit: \"wait\"        # queue calls rather than refuse them\n")
		writeWriteClasses(w, s, "")
	} else {
		w("# Upstream budget: the spec states no rate limit. A safe start until you\n")
		w("# know the API's own limit (its documentation, or rate_limit_status after a\n")
		w("# few calls: specgate learns advertised limits from response headers):\n")
		w("# upstreams:\n")
		w("#   - match: %s\n", yamlLiteral(match))
		w("#     requests_per_window: %d\n", safeRequests)
		w("#     window: %s\n", yamlString(formatWindow(safeWindow)))
		w("#     on_limit: \"wait\"\n")
		writeWriteClasses(w, s, "# ")
	}
	return b.String()
}

// writeWriteClasses proposes a class for each write method the spec has, so writes go
// one a second apart from reads (as careful API clients pace them); prefix comments
// them out with the budget they belong to.
func writeWriteClasses(w func(string, ...any), s *spec.Spec, prefix string) {
	var methods []string
	for _, m := range []string{"POST", "PUT", "PATCH", "DELETE"} {
		for _, e := range s.Endpoints {
			if e.Method == m {
				methods = append(methods, m)
				break
			}
		}
	}
	if len(methods) == 0 {
		return
	}
	w("%s    # Writes paced apart from reads: a call pays the budget and each class\n", prefix)
	w("%s    # it matches (\"METHOD /path/**\", \"tag:NAME\" or an operationId glob).\n", prefix)
	w("%s    classes:\n", prefix)
	for _, m := range methods {
		w("%s      - {match: %s, min_interval: \"1s\"}\n", prefix, yamlString(m+" /**"))
	}
}

// credential is one scheme's stub: its config fields and the variable
// each is read from.
type credential struct {
	scheme string
	what   string
	fields []string
	vars   []string
	// prefix is written before the variable in the value: the word an
	// Authorization API key needs ("Bearer", "Bot", "SSWS").
	prefix string
	// note is a comment line written above the fields.
	note string
	// issued is a token a person must get through an OAuth flow first: an
	// alternative with a plain key is proposed before it.
	issued bool
}

// writeAuth writes the credential stubs: the spec's security alternatives
// (any one of which authenticates a call) are gathered from its endpoints,
// the one needing the fewest variables is written (first in the spec's
// order on a tie) and the others are commented out. A spec with no
// security scheme gets a commented Authorization header instead: many
// APIs still take a token (GitHub's spec declares none).
func writeAuth(b *strings.Builder, s *spec.Spec, api string) {
	if len(s.Schemes) == 0 {
		fmt.Fprintf(b, "    # The spec declares no security scheme. If the API takes a token (GitHub\n")
		fmt.Fprintf(b, "    # does: 60 requests an hour without one), send it with every call:\n")
		fmt.Fprintf(b, "    # headers: {Authorization: %s}\n", yamlString("Bearer ${"+api+"_TOKEN}"))
		return
	}
	alts := securityAlternatives(s)
	var usable, other [][]credential
	owner := map[string]string{} // variable -> the scheme that has it
	for _, alt := range alts {
		creds, ok := alternativeCredentials(s, api, alt)
		distinctVars(creds, api, owner)
		if ok {
			usable = append(usable, creds)
		} else {
			other = append(other, creds)
		}
	}
	// Fewest variables first, then those with no token to get through an
	// OAuth flow; the sort is stable, so ties keep the spec's order. (sort,
	// not slices: a generic stable sort of this type alone costs the binary
	// 5 KB.)
	sort.SliceStable(usable, func(i, j int) bool {
		a, b := usable[i], usable[j]
		if d := countVars(a) - countVars(b); d != 0 {
			return d < 0
		}
		return issuedCount(a) < issuedCount(b)
	})
	fmt.Fprintf(b, "    # Credentials, read from the environment: export them before serving (an\n")
	fmt.Fprintf(b, "    # unset one is a warning, then auth_error on a call).\n")
	if len(usable)+len(other) > 1 {
		fmt.Fprintf(b, "    # The spec accepts any one of %d ways; the one written needs the fewest\n", len(usable)+len(other))
		fmt.Fprintf(b, "    # variables. To use another, comment it out and uncomment that one.\n")
	}
	if len(usable) == 0 {
		fmt.Fprintf(b, "    # auth:\n")
	} else {
		fmt.Fprintf(b, "    auth:\n")
		writeCredentials(b, usable[0], "      ")
	}
	for i, creds := range append(usable[min(1, len(usable)):], other...) {
		if (i == 0 && len(usable) > 0) || (i > 0 && len(creds) > 1) {
			fmt.Fprintf(b, "      # or:\n")
		}
		writeCredentials(b, creds, "      # ")
	}
}

// genericWords are the words of a scheme's name that say nothing about
// which credential it is.
var genericWords = []string{"API", "KEY", "AUTH", "TOKEN", "BEARER", "BASIC", "HEADER", "QUERY", "COOKIE",
	"OAUTH", "OAUTH2", "SECURITY", "SCHEME", "HTTP"}

// distinctVars keeps two schemes from sharing a variable unless their
// names differ only in generic words (headerAuth and queryAuth: the same
// key, sent two ways). Otherwise the later scheme's variable gets the
// words that tell it apart: OpenAI's AdminApiKeyAuth reads
// OPENAI_ADMIN_API_KEY where ApiKeyAuth reads OPENAI_API_KEY.
func distinctVars(creds []credential, api string, owner map[string]string) {
	for i := range creds {
		c := &creds[i]
		for j, v := range c.vars {
			first, ok := owner[v]
			if !ok || first == c.scheme {
				owner[v] = c.scheme
				continue
			}
			var words []string
			for _, w := range snakeWords(strings.ReplaceAll(strings.ReplaceAll(c.scheme, "OAuth", "oauth"), "oAuth", "oauth")) {
				if !slices.Contains(genericWords, w) && !isVersionWord(strings.ToLower(w)) && w != api {
					words = append(words, w)
				}
			}
			if len(words) == 0 {
				continue
			}
			c.vars[j] = api + "_" + strings.Join(words, "_") + strings.TrimPrefix(v, api)
			owner[c.vars[j]] = c.scheme
		}
	}
}

func issuedCount(creds []credential) int {
	n := 0
	for _, c := range creds {
		if c.issued {
			n++
		}
	}
	return n
}

func countVars(creds []credential) int {
	n := 0
	for _, c := range creds {
		n += len(c.vars)
	}
	return n
}

func writeCredentials(b *strings.Builder, creds []credential, prefix string) {
	for _, c := range creds {
		if c.fields == nil {
			fmt.Fprintf(b, "%s%s: %s credentials are not supported by specgate\n", strings.Replace(prefix, "# ", "", 1)+"# ", oneLineText(c.scheme), oneLineText(c.what))
			continue
		}
		fmt.Fprintf(b, "%s%s:  # %s\n", prefix, yamlKey(c.scheme), oneLineText(c.what))
		if c.note != "" {
			fmt.Fprintf(b, "%s  # %s\n", prefix, oneLineText(c.note))
		}
		for i, f := range c.fields {
			v := "${" + c.vars[i] + "}"
			if c.prefix != "" {
				v = c.prefix + " " + v
			}
			fmt.Fprintf(b, "%s  %s: %s\n", prefix, f, yamlString(v))
		}
	}
}

// securityAlternatives lists the spec's security alternatives in the order
// its endpoints first name them, then each scheme no endpoint names on its
// own; an alternative that needs no credentials is left out.
func securityAlternatives(s *spec.Spec) [][]string {
	var alts [][]string
	seen := map[string]bool{}
	used := map[string]bool{}
	for _, e := range s.Endpoints {
		for _, alt := range e.Security {
			if len(alt) == 0 {
				continue
			}
			alt = slices.Clone(alt)
			slices.Sort(alt)
			k := strings.Join(alt, "\x00")
			if seen[k] {
				continue
			}
			seen[k] = true
			alts = append(alts, alt)
			for _, n := range alt {
				used[n] = true
			}
		}
	}
	names := make([]string, 0, len(s.Schemes))
	for n := range s.Schemes {
		if !used[n] {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	for _, n := range names {
		alts = append(alts, []string{n})
	}
	return alts
}

// alternativeCredentials is the stub of each scheme of one alternative; ok
// is false when specgate cannot supply one of them. Variable names are
// <API>_API_KEY for an API key or bearer key (_TOKEN when the scheme is
// named for a token), <API>_USERNAME and _PASSWORD for basic,
// <API>_CLIENT_ID and _CLIENT_SECRET for oauth2; two schemes of one
// alternative that would share a name get the scheme's name in theirs.
func alternativeCredentials(s *spec.Spec, api string, alt []string) ([]credential, bool) {
	var out []credential
	ok := true
	taken := map[string]int{}
	for _, n := range alt {
		sc, found := s.Schemes[n]
		if !found {
			continue
		}
		c := credential{scheme: n}
		var suffixes []string
		tokenNamed := strings.Contains(strings.ToLower(n+" "+sc.Name), "token")
		switch kind := sc.Kind(); {
		case kind == spec.SchemeAPIKey:
			c.fields, c.what = []string{"value"}, fmt.Sprintf("apiKey in %s %s", sc.In, sc.Name)
			suffixes = []string{"API_KEY"}
			if sc.In == "header" && strings.EqualFold(sc.Name, "Authorization") {
				// the value is the whole header: a bare key is a 401
				if sc.AuthPrefix != "" {
					c.prefix = sc.AuthPrefix
					c.note = fmt.Sprintf("The value is the whole Authorization header: %q then the key.", sc.AuthPrefix+" ")
				} else {
					c.note = "The value is the whole Authorization header: put its scheme word first if the API wants one (\"Bearer <key>\")."
				}
			}
		case kind == spec.SchemeToken && sc.Scheme == "bearer":
			c.fields, c.what = []string{"token"}, "http bearer"
			suffixes = []string{"API_KEY"}
		case kind == spec.SchemeBasic:
			c.fields, c.what = []string{"username", "password"}, "http basic"
			suffixes = []string{"USERNAME", "PASSWORD"}
		case kind == spec.SchemeOAuth2 && !slices.Contains(sc.Flows, "clientCredentials"):
			// specgate cannot run a flow that needs a person (authorization
			// code, implicit): a token issued beforehand is what works
			flows := strings.Join(sc.Flows, ", ")
			if flows == "" {
				flows = "none named"
			}
			c.fields, c.what = []string{"token"}, fmt.Sprintf("oauth2 (the spec's flows: %s): a pre-issued access token", flows)
			c.note = "Get an access token from the API's console or its OAuth flow; it is sent as \"Authorization: Bearer <token>\"."
			suffixes = []string{"ACCESS_TOKEN"}
			c.issued = true
		case kind == spec.SchemeOAuth2:
			c.fields, c.what = []string{"client_id", "client_secret"}, "oauth2 client credentials"
			suffixes = []string{"CLIENT_ID", "CLIENT_SECRET"}
		default:
			c.what = sc.Type
			if sc.Scheme != "" {
				c.what += " " + sc.Scheme
			}
			ok = false
			out = append(out, c)
			continue
		}
		if tokenNamed && len(suffixes) == 1 {
			suffixes = []string{"TOKEN"}
		}
		for _, suf := range suffixes {
			c.vars = append(c.vars, api+"_"+suf)
		}
		out = append(out, c)
	}
	for _, c := range out {
		for _, v := range c.vars {
			taken[v]++
		}
	}
	for i := range out {
		for j, v := range out[i].vars {
			if taken[v] > 1 {
				out[i].vars[j] = api + "_" + envName(out[i].scheme) + strings.TrimPrefix(v, api)
			}
		}
	}
	return out, ok
}

// apiName is the API's name in the variables init writes, upper case
// (init --name gives it outright): the host's second-level label (api.openai.com gives OPENAI, api.github.com
// GITHUB), else the title's leading words before a generic one ("Stripe
// API" gives STRIPE), else the spec's name.
func apiName(s *spec.Spec, specName string) string {
	if u, err := url.Parse(s.BaseURL); err == nil && u.IsAbs() {
		host := strings.TrimSuffix(u.Hostname(), ".")
		labels := strings.Split(host, ".")
		if net.ParseIP(host) == nil && len(labels) >= 2 {
			l := labels[len(labels)-2]
			// example.co.uk, example.com.au: the label before the country's.
			if len(labels) >= 3 && len(labels[len(labels)-1]) == 2 && slices.Contains([]string{"co", "com", "org", "net", "ac", "gov"}, l) {
				l = labels[len(labels)-3]
			}
			if n := upperWord(l); n != "" {
				return n
			}
		}
	}
	var words []string
	for _, w := range strings.FieldsFunc(s.Title, func(r rune) bool { return r == ' ' || r == '\t' || r == '_' || r == '/' }) {
		lw := strings.ToLower(w)
		if slices.Contains([]string{"api", "apis", "rest", "http", "web", "openapi", "swagger", "-", "for", "the", "(preview)"}, lw) ||
			strings.ContainsAny(w, "()[]:") || isVersionWord(lw) {
			if len(words) > 0 {
				break
			}
			continue
		}
		if n := upperWord(w); n != "" {
			words = append(words, n)
		}
		if len(words) == 2 {
			break
		}
	}
	if len(words) > 0 {
		return strings.Join(words, "_")
	}
	return envName(specName)
}

// upperWord is w in upper case with every run of other characters than
// ASCII letters and digits made one '_'; "" when nothing is left or it
// starts with a digit.
func upperWord(w string) string {
	var b strings.Builder
	for _, r := range w {
		switch {
		case r < unicode.MaxASCII && (unicode.IsLetter(r) || unicode.IsDigit(r)):
			b.WriteRune(unicode.ToUpper(r))
		case b.Len() > 0 && !strings.HasSuffix(b.String(), "_"):
			b.WriteByte('_')
		}
	}
	out := strings.Trim(b.String(), "_")
	if out == "" || unicode.IsDigit(rune(out[0])) {
		return ""
	}
	return out
}

// isVersionWord matches "v3", "3.0", "2010-04-01".
func isVersionWord(w string) bool {
	w = strings.TrimPrefix(w, "v")
	return w != "" && strings.Trim(w, "0123456789.-") == ""
}

// envName joins words into an upper snake case variable name, splitting
// camelCase: ("stripe", "bearerAuth", "token") gives
// STRIPE_BEARER_AUTH_TOKEN.
func envName(parts ...string) string {
	var words []string
	for _, p := range parts {
		words = append(words, snakeWords(p)...)
	}
	return strings.Join(words, "_")
}

func snakeWords(s string) []string {
	var words []string
	var cur []rune
	flush := func() {
		if len(cur) > 0 {
			words = append(words, strings.ToUpper(string(cur)))
			cur = cur[:0]
		}
	}
	rs := []rune(s)
	for i, r := range rs {
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) || r > unicode.MaxASCII {
			flush()
			continue
		}
		if unicode.IsUpper(r) && len(cur) > 0 {
			prev := cur[len(cur)-1]
			nextLower := i+1 < len(rs) && unicode.IsLower(rs[i+1])
			// "bearerAuth" splits before A; "APIKey" splits before K.
			if unicode.IsLower(prev) || unicode.IsDigit(prev) || (unicode.IsUpper(prev) && nextLower) {
				flush()
			}
		}
		cur = append(cur, r)
	}
	flush()
	return words
}

func formatWindow(d time.Duration) string {
	switch {
	case d >= time.Hour && d%time.Hour == 0:
		return fmt.Sprintf("%dh", d/time.Hour)
	case d >= time.Minute && d%time.Minute == 0:
		return fmt.Sprintf("%dm", d/time.Minute)
	case d >= time.Second && d%time.Second == 0:
		return fmt.Sprintf("%ds", d/time.Second)
	}
	return d.String()
}

func describeServer(base string) string {
	if base == "" {
		return "not given"
	}
	return fmt.Sprintf("relative (%q)", base)
}

func serverPath(base string) string {
	if strings.HasPrefix(base, "/") {
		return strings.TrimSuffix(base, "/")
	}
	return ""
}

// yamlString quotes s for YAML: a JSON string is a valid YAML
// double-quoted scalar. JSON leaves DEL, C1 controls, NEL and format
// characters (bidi overrides) raw; YAML reads NEL as a line break and
// refuses the others, so each is written as its \u escape too.
func yamlString(s string) string {
	q, _ := json.Marshal(s)
	if strings.IndexFunc(string(q), unsafeText) < 0 {
		return string(q)
	}
	var b strings.Builder
	for _, r := range string(q) {
		switch {
		case !unsafeText(r):
			b.WriteRune(r)
		case r > 0xFFFF:
			fmt.Fprintf(&b, `\U%08X`, r)
		default:
			fmt.Fprintf(&b, `\u%04X`, r)
		}
	}
	return b.String()
}

// yamlLiteral quotes s as a value the config keeps as written: Load expands
// ${NAME} in every string, so a "${" in a file name is escaped as "$${".
func yamlLiteral(s string) string {
	return yamlString(strings.ReplaceAll(s, "${", "$${"))
}

// configSpecName makes a spec name the config accepts (letters, digits, '-' and
// '_') from one taken from a file name such as "x: y #z.yaml": each run of
// other characters becomes one '-'.
func configSpecName(name string) string {
	var b strings.Builder
	dash := false
	for _, r := range name {
		if r < unicode.MaxASCII && (r == '_' || r == '-' || unicode.IsLetter(r) || unicode.IsDigit(r)) {
			b.WriteRune(r)
			dash = false
		} else if !dash {
			b.WriteByte('-')
			dash = true
		}
	}
	if out := strings.Trim(b.String(), "-"); out != "" {
		return out
	}
	return "api"
}

// yamlKey quotes a key as well: a scheme named "null", "on" or "1" would
// otherwise decode as another type.
func yamlKey(s string) string { return yamlLiteral(s) }

// oneLineText makes text from a spec safe in a YAML comment: every control,
// format or line-breaking character (YAML also ends a line at NEL, U+2028
// and U+2029) becomes a space, and runs of space one, so a newline in a
// header name cannot start a line of its own (a top-level key).
func oneLineText(s string) string {
	return strings.Join(strings.Fields(strings.Map(func(r rune) rune {
		if unsafeText(r) {
			return ' '
		}
		return r
	}, s)), " ")
}

// unsafeText reports whether r may not stand raw in the YAML init writes:
// a control character (NEL and DEL among them), a line or paragraph
// separator, a format character such as a bidi override, or one that is
// not a valid character at all.
func unsafeText(r rune) bool {
	return unicode.IsControl(r) || unicode.In(r, unicode.Zl, unicode.Zp, unicode.Cf, unicode.Cs, unicode.Co) ||
		r == utf8.RuneError || !unicode.IsPrint(r) && r != ' '
}
