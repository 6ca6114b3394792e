package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"
	"unicode"

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
		_, err := io.WriteString(stdout, initConfig(s, location))
		return err
	}
	written := location
	if !isURL(location) {
		if written, err = relativeTo(filepath.Dir(out), location); err != nil {
			return err
		}
	}
	return writeNew(out, initConfig(s, written), force)
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
func initConfig(s *spec.Spec, location string) string {
	name := configSpecName(s.Name)
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	title := oneLineText(s.Title)
	if title == "" {
		title = name
	}
	w("# specgate config for %s (%s), written by `specgate init`.\n", title, formatName(s.Version))
	w("# Check it with `specgate check --config FILE`; serve it with `specgate serve --config FILE`.\n")
	w("# Every key, its default and why: config.example.yaml.\n\n")
	w("specs:\n")
	w("  - # Endpoint ids start with it: %s.<operationId>.\n", oneLineText(name))
	w("    name: %s\n", yamlLiteral(name))
	w("    location: %s\n", yamlLiteral(location))

	host := ""
	switch u, err := url.Parse(s.BaseURL); {
	case s.BaseURL == "" || err != nil || !u.IsAbs():
		w("    # The spec's server is %s: calls need an absolute base URL.\n", describeServer(s.BaseURL))
		w("    # Set %s (e.g. https://api.example.com%s) or write the URL here.\n", envName(name, "base_url"), serverPath(s.BaseURL))
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

	writeAuth(&b, s, name)

	match := host
	if match == "" {
		match = group
	}
	w("\n")
	if l := s.StatedLimit; l != nil {
		w("# Upstream budget: the spec states %d requests per %s (%s: %s).\n", l.Requests, formatWindow(l.Window), l.Source, oneLineText(l.Text))
		w("upstreams:\n")
		w("  - match: %s\n", yamlLiteral(match))
		w("    requests_per_window: %d\n", l.Requests)
		w("    window: %s\n", yamlString(formatWindow(l.Window)))
		w("    on_limit: \"wait\"        # queue calls rather than refuse them\n")
	} else {
		w("# Upstream budget: the spec states no rate limit. A safe start until you\n")
		w("# know the API's own limit (its documentation, or rate_limit_status after a\n")
		w("# few calls: specgate learns advertised limits from response headers):\n")
		w("# upstreams:\n")
		w("#   - match: %s\n", yamlLiteral(match))
		w("#     requests_per_window: %d\n", safeRequests)
		w("#     window: %s\n", yamlString(formatWindow(safeWindow)))
		w("#     on_limit: \"wait\"\n")
	}
	return b.String()
}

func writeAuth(b *strings.Builder, s *spec.Spec, name string) {
	if len(s.Schemes) == 0 {
		return
	}
	names := make([]string, 0, len(s.Schemes))
	for n := range s.Schemes {
		names = append(names, n)
	}
	sort.Strings(names)
	fmt.Fprintf(b, "    # Credentials, one ${ENV} per field of each security scheme; export them\n")
	fmt.Fprintf(b, "    # before serving (an unset one is a warning, then auth_error on a call).\n")
	fmt.Fprintf(b, "    auth:\n")
	for _, n := range names {
		sc := s.Schemes[n]
		var fields []string
		var what string
		switch {
		case sc.Type == "apiKey":
			fields, what = []string{"value"}, fmt.Sprintf("apiKey in %s %s", sc.In, sc.Name)
		case sc.Type == "http" && sc.Scheme == "bearer":
			fields, what = []string{"token"}, "http bearer"
		case sc.Type == "http" && sc.Scheme == "basic":
			fields, what = []string{"username", "password"}, "http basic"
		case sc.Type == "oauth2":
			fields, what = []string{"client_id", "client_secret"}, "oauth2 client credentials"
			if !slices.Contains(sc.Flows, "clientCredentials") {
				what = fmt.Sprintf("oauth2 (the spec's flows: %s); specgate uses client credentials", strings.Join(sc.Flows, ", "))
			}
		default:
			kind := sc.Type
			if sc.Scheme != "" {
				kind += " " + sc.Scheme
			}
			fmt.Fprintf(b, "      # %s: %s credentials are not supported by specgate\n", n, kind)
			continue
		}
		fmt.Fprintf(b, "      %s:  # %s\n", yamlKey(n), what)
		for _, f := range fields {
			fmt.Fprintf(b, "        %s: %s\n", f, yamlString("${"+envName(name, n, f)+"}"))
		}
	}
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
// double-quoted scalar.
func yamlString(s string) string {
	q, _ := json.Marshal(s)
	return string(q)
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

func oneLineText(s string) string { return strings.Join(strings.Fields(s), " ") }
