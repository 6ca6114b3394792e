package spec

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/getkin/kin-openapi/openapi2"
	"github.com/getkin/kin-openapi/openapi2conv"
	"github.com/getkin/kin-openapi/openapi3"
)

// Defaults for Options fields left zero.
const (
	DefaultMaxBytes = 64 << 20
	DefaultTimeout  = 30 * time.Second
)

// Options tune Load. The zero value loads a local file or URL with the
// defaults below and refuses external references.
type Options struct {
	// Name is the spec name endpoint ids start with. If empty, the file name
	// without its extension is used ("petstore-v3.yaml" gives "petstore-v3").
	Name string
	// BaseURL overrides every server the spec declares. If empty, the spec's
	// own servers are used.
	BaseURL string
	// AllowExternalRefs lets the loader follow $refs to http(s) URLs. Refs to
	// local files are never followed.
	AllowExternalRefs bool
	// HTTPClient fetches specs and external refs given as URLs. If nil, a
	// client with Timeout that follows no redirect to another host is used.
	HTTPClient *http.Client
	// MaxBytes bounds the size of a spec read from a file or URL. If zero,
	// DefaultMaxBytes.
	MaxBytes int64
	// Timeout bounds fetching a spec from a URL. If zero, DefaultTimeout.
	Timeout time.Duration
	// Validate runs kin-openapi's strict validation and reports its findings
	// as warnings. Problems never stop a spec from serving.
	Validate bool
}

// LoadError says which spec failed to load and why, in one line.
type LoadError struct {
	Location string
	Reason   string
}

func (e *LoadError) Error() string { return e.Location + ": " + e.Reason }

// Read returns the bytes at location, a file path or an http(s) URL, bounded
// by opts.MaxBytes and, for URLs, opts.Timeout.
func Read(ctx context.Context, location string, opts Options) ([]byte, error) {
	max := opts.MaxBytes
	if max <= 0 {
		max = DefaultMaxBytes
	}
	if isURL(location) {
		return readURL(ctx, location, opts, max)
	}
	f, err := os.Open(location)
	if err != nil {
		return nil, &LoadError{Location: location, Reason: shortOSError(err)}
	}
	defer f.Close()
	// Sized from the file's length, as os.ReadFile is: growing by halves,
	// a 13 MB spec cost 30 MB.
	var buf bytes.Buffer
	if fi, err := f.Stat(); err == nil && fi.Size() > 0 && fi.Size() <= max {
		buf.Grow(int(fi.Size()) + bytes.MinRead)
	}
	if _, err := buf.ReadFrom(io.LimitReader(f, max+1)); err != nil {
		return nil, &LoadError{Location: location, Reason: shortOSError(err)}
	}
	data := buf.Bytes()
	if int64(len(data)) > max {
		return nil, &LoadError{Location: location, Reason: fmt.Sprintf("larger than the %d byte limit", max)}
	}
	return data, nil
}

func isURL(s string) bool {
	return strings.HasPrefix(s, "http://") || strings.HasPrefix(s, "https://")
}

func shortOSError(err error) string {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

func readURL(ctx context.Context, location string, opts Options, max int64) ([]byte, error) {
	timeout := opts.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	client := opts.HTTPClient
	if client == nil {
		client = sameHostClient()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, location, nil)
	if err != nil {
		return nil, &LoadError{Location: location, Reason: "invalid URL"}
	}
	req.Header.Set("Accept", "application/json, application/yaml;q=0.9, */*;q=0.5")
	resp, err := client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, &LoadError{Location: location, Reason: "fetch: " + err.Error()}
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, &LoadError{Location: location, Reason: "fetch: HTTP " + resp.Status}
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, max+1))
	if err != nil {
		return nil, &LoadError{Location: location, Reason: "fetch: " + err.Error()}
	}
	if int64(len(data)) > max {
		return nil, &LoadError{Location: location, Reason: fmt.Sprintf("larger than the %d byte limit", max)}
	}
	return data, nil
}

// sameHostClient follows redirects only within the original host.
func sameHostClient() *http.Client {
	return &http.Client{
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) >= 5 {
				return errors.New("too many redirects")
			}
			if req.URL.Host != via[0].URL.Host {
				return fmt.Errorf("redirect to another host (%s) refused", req.URL.Host)
			}
			return nil
		},
	}
}

// NameFromLocation derives a spec name from a file path or URL: the last
// path element without its extension, dots turned into dashes.
func NameFromLocation(location string) string {
	p := location
	if isURL(location) {
		if u, err := url.Parse(location); err == nil {
			p = u.Path
		}
	}
	base := filepath.Base(p)
	for _, ext := range []string{".json", ".yaml", ".yml"} {
		if strings.HasSuffix(strings.ToLower(base), ext) {
			base = base[:len(base)-len(ext)]
			break
		}
	}
	// Dots would blur where the spec name ends in an endpoint id.
	base = strings.ReplaceAll(base, ".", "-")
	if base == "" || base == "-" || base == "/" {
		return "api"
	}
	return base
}

// Load reads and parses the spec at location.
func Load(ctx context.Context, location string, opts Options) (*Spec, error) {
	data, err := Read(ctx, location, opts)
	if err != nil {
		return nil, err
	}
	return Parse(ctx, location, data, opts)
}

// Parse builds a Spec from the bytes of an OpenAPI 3.x or Swagger 2.0
// description in JSON or YAML. location names the spec in errors, gives the
// default name, and is the base for relative server URLs when it is a URL.
//
// OpenAPI 3 documents are read straight from their JSON (YAML is first
// turned into JSON, keeping key order) without building kin-openapi's object
// graph, which for a large spec costs seconds and hundreds of megabytes.
// Swagger 2.0 is converted with openapi2conv first.
func Parse(ctx context.Context, location string, data []byte, opts Options) (s *Spec, err error) {
	defer func() {
		// A spec is untrusted input: a panic while reading one must cost this
		// spec, not the server.
		if r := recover(); r != nil {
			s, err = nil, &LoadError{Location: location, Reason: fmt.Sprintf("unsupported document (%v)", r)}
		}
	}()
	v3, version, pruned, err := toOpenAPI3JSON(ctx, location, data, opts)
	if err != nil {
		return nil, err
	}
	name := opts.Name
	if name == "" {
		name = defaultName(location, v3)
	}
	s, err = buildRaw(name, location, version, v3, opts)
	if err != nil {
		return nil, &LoadError{Location: location, Reason: err.Error()}
	}
	s.Warnings = append(pruned, s.Warnings...)
	if refs := externalRefs(v3); len(refs) > 0 {
		more := ""
		if len(refs) > 3 {
			more = fmt.Sprintf(" and %d more", len(refs)-3)
			refs = refs[:3]
		}
		if opts.AllowExternalRefs {
			s.Warnings = append(s.Warnings, fmt.Sprintf("external $refs (%s%s) are fetched over http(s) when an operation is validated; refs to local files never are", strings.Join(refs, ", "), more))
		} else {
			s.Warnings = append(s.Warnings, fmt.Sprintf("external $refs are not followed (%s%s): operations that need them cannot be validated", strings.Join(refs, ", "), more))
		}
	}
	s.refs = opts
	if opts.Validate {
		// kin-openapi's validation walks every schema of the document and
		// costs quadratic time in their nesting.
		if where := s.tooDeep(); where != "" {
			s.Warnings = append(s.Warnings, "validation skipped: "+where+" nests deeper than "+strconv.Itoa(maxSchemaDepth)+" levels")
		} else {
			s.Warnings = append(s.Warnings, validate(ctx, v3, opts)...)
		}
	}
	return s, nil
}

// toOpenAPI3JSON returns the document as OpenAPI 3 JSON, the version the
// document was written in, and warnings about what was left out on the way.
func toOpenAPI3JSON(ctx context.Context, location string, data []byte, opts Options) ([]byte, string, []string, error) {
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 {
		return nil, "", nil, &LoadError{Location: location, Reason: "empty document"}
	}
	if trimmed[0] != '{' {
		j, err := yamlToJSON(trimmed)
		if err != nil {
			return nil, "", nil, &LoadError{Location: location, Reason: err.Error()}
		}
		trimmed = j
	}
	if v, compact, ok := openAPI3Head(trimmed); ok {
		return openAPI3JSON(v, compact)
	}
	var head struct {
		Swagger any `json:"swagger"`
		OpenAPI any `json:"openapi"`
	}
	if err := json.Unmarshal(trimmed, &head); err != nil {
		return nil, "", nil, &LoadError{Location: location, Reason: "not JSON or YAML: " + jsonErrorText(err)}
	}
	switch {
	case head.Swagger != nil:
		if v := fmt.Sprint(head.Swagger); v != "2.0" {
			return nil, "", nil, &LoadError{Location: location, Reason: fmt.Sprintf("unsupported swagger version %q", v)}
		}
		// kin-openapi decodes each schema level again from its bytes: a
		// deep one must go before it reads the document.
		var pruned, tuples []string
		pruned, trimmed = pruneDeepSwagger2(trimmed)
		trimmed, tuples = untupleItems(trimmed)
		pruned = append(pruned, tuples...)
		var doc2 openapi2.T
		if err := json.Unmarshal(trimmed, &doc2); err != nil {
			return nil, "", nil, &LoadError{Location: location, Reason: "invalid Swagger 2.0: " + jsonErrorText(err)}
		}
		var base *url.URL
		if isURL(location) {
			base, _ = url.Parse(location)
		}
		doc, err := openapi2conv.ToV3WithLoader(&doc2, newLoader(ctx, opts), base)
		if err != nil {
			return nil, "", nil, &LoadError{Location: location, Reason: "converting Swagger 2.0: " + oneLine(err.Error())}
		}
		formBodies(&doc2, doc)
		out, err := json.Marshal(doc)
		if err != nil {
			return nil, "", nil, &LoadError{Location: location, Reason: "converting Swagger 2.0: " + oneLine(err.Error())}
		}
		return out, "2.0", pruned, nil
	case head.OpenAPI != nil:
		v := fmt.Sprint(head.OpenAPI)
		if !strings.HasPrefix(v, "3.") {
			return nil, "", nil, &LoadError{Location: location, Reason: fmt.Sprintf("unsupported openapi version %q", v)}
		}
		var compact bytes.Buffer
		compact.Grow(len(trimmed))
		if err := json.Compact(&compact, trimmed); err != nil {
			return nil, "", nil, &LoadError{Location: location, Reason: "not JSON or YAML: " + jsonErrorText(err)}
		}
		return openAPI3JSON(v, compact.Bytes())
	default:
		return nil, "", nil, &LoadError{Location: location, Reason: `neither an "openapi" nor a "swagger" version field`}
	}
}

// openAPI3Head reads the version of an OpenAPI 3 document in JSON and
// returns it compacted, in one pass where decoding the version fields first
// checked all of it once more. ok is false for anything else (Swagger 2.0,
// invalid JSON, a version field spelled in another case): the caller then
// reads the head as json.Unmarshal does, with its errors.
func openAPI3Head(doc []byte) (version string, compact []byte, ok bool) {
	top, ok := rawObject(doc)
	if !ok {
		return "", nil, false
	}
	for k := range top {
		if (strings.EqualFold(k, "openapi") && k != "openapi") || strings.EqualFold(k, "swagger") {
			return "", nil, false
		}
	}
	var v any
	if raw := top["openapi"]; raw == nil || json.Unmarshal(raw, &v) != nil || v == nil {
		return "", nil, false
	}
	version = fmt.Sprint(v)
	if !strings.HasPrefix(version, "3.") {
		return "", nil, false
	}
	var buf bytes.Buffer
	buf.Grow(len(doc))
	if json.Compact(&buf, doc) != nil {
		return "", nil, false
	}
	return version, buf.Bytes(), true
}

// openAPI3JSON is the compacted OpenAPI 3 document of version v, tuple
// items read as their first schema under 3.0.
func openAPI3JSON(v string, compact []byte) ([]byte, string, []string, error) {
	if strings.HasPrefix(v, "3.0") {
		out, tuples := untupleItems(compact)
		return out, v, tuples, nil
	}
	return compact, v, nil, nil
}

// externalRefs lists the external references a document holds (by a
// textual scan, so a "$ref" inside an example counts too). specgate serves
// each spec from its own document and reads no other file or URL on a
// spec's say-so: an operation that needs one of these cannot be rebuilt.
func externalRefs(doc []byte) []string {
	if !hasNonLocalRef(doc) {
		return nil
	}
	// A "$ref" inside an example or a default is data (GitHub's
	// SCIM examples hold "$ref" fields), not a reference: only references
	// in the document's own positions count.
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil {
		return nil
	}
	var out []string
	seen := map[string]bool{}
	// examples is a map of Example Objects, whose value is data.
	var walk func(v any, examples bool)
	walk = func(v any, examples bool) {
		switch x := v.(type) {
		case map[string]any:
			if ref, ok := x["$ref"].(string); ok && !strings.HasPrefix(ref, "#") && !seen[ref] {
				seen[ref] = true
				out = append(out, ref)
			}
			for _, k := range sortedRawKeys(x) {
				if k == "example" || k == "default" || k == "enum" || k == "const" {
					continue
				}
				if examples {
					if ex, ok := x[k].(map[string]any); ok {
						for ek, ev := range ex {
							if ek != "value" {
								walk(ev, false)
							}
						}
						if ref, ok := ex["$ref"].(string); ok && !strings.HasPrefix(ref, "#") && !seen[ref] {
							seen[ref] = true
							out = append(out, ref)
						}
					}
					continue
				}
				walk(x[k], k == "examples")
			}
		case []any:
			for _, c := range x {
				walk(c, false)
			}
		}
	}
	walk(v, false)
	return out
}

var kinTypeError = regexp.MustCompile(`cannot unmarshal (\w+) into (?:Go )?(?:value|field \S+|struct field \S+) of type (?:\S+\.)?(\S+)`)

// hasNonLocalRef reports whether doc has text of the form "$ref": "x" with
// x not starting with #: a cheap test before the walk that tells
// references from data. It scans bytes; a regular expression over a 13 MB
// spec's thousands of refs cost a twentieth of its load.
func hasNonLocalRef(doc []byte) bool {
	key := []byte(`"$ref"`)
	for i := 0; ; {
		at := bytes.Index(doc[i:], key)
		if at < 0 {
			return false
		}
		j := refSpace(doc, i+at+len(key))
		i += at + len(key)
		if j >= len(doc) || doc[j] != ':' {
			continue
		}
		j = refSpace(doc, j+1)
		if j >= len(doc) || doc[j] != '"' {
			continue
		}
		end := bytes.IndexByte(doc[j+1:], '"')
		if end < 0 {
			return false
		}
		if end == 0 || doc[j+1] != '#' {
			return true
		}
	}
}

// refSpace skips what \s matches in RE2: tab, newline, form feed, carriage
// return and space.
func refSpace(doc []byte, i int) int {
	for i < len(doc) && (doc[i] == ' ' || doc[i] == '\t' || doc[i] == '\n' || doc[i] == '\f' || doc[i] == '\r') {
		i++
	}
	return i
}

func newLoader(ctx context.Context, opts Options) *openapi3.Loader {
	loader := openapi3.NewLoader()
	loader.Context = ctx
	loader.IsExternalRefsAllowed = opts.AllowExternalRefs
	// A spec's refs never read local files; http(s) URLs only when allowed,
	// bounded like a spec fetched from a URL.
	loader.ReadFromURIFunc = func(_ *openapi3.Loader, u *url.URL) ([]byte, error) {
		if !opts.AllowExternalRefs {
			return nil, fmt.Errorf("external $ref %q refused (allow_external_refs is off)", u.Redacted())
		}
		if u.Scheme != "http" && u.Scheme != "https" {
			return nil, fmt.Errorf("external $ref %q refused: only http(s) refs are followed, never local files", u.Redacted())
		}
		data, err := Read(ctx, u.String(), opts)
		if err != nil {
			return nil, err
		}
		return refDocumentJSON(data)
	}
	return loader
}

// refDocumentJSON hands kin-openapi an external document as JSON. Its own
// YAML decoding bounds alias nodes, not the text they repeat; converting
// first holds an external document to the same bound as a spec.
func refDocumentJSON(data []byte) ([]byte, error) {
	trimmed := bytes.TrimSpace(bytes.TrimPrefix(data, []byte("\xef\xbb\xbf")))
	if len(trimmed) == 0 || trimmed[0] == '{' || trimmed[0] == '[' {
		return data, nil
	}
	return yamlToJSON(trimmed)
}

// jsonErrorText drops Go type names from encoding/json errors.
func jsonErrorText(err error) string {
	if m := kinTypeError.FindStringSubmatch(err.Error()); m != nil {
		return fmt.Sprintf("a JSON %s where the format expects %s", m[1], strings.ToLower(strings.TrimPrefix(m[2], "openapi")))
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		where := te.Field
		if where == "" {
			where = fmt.Sprintf("offset %d", te.Offset)
		}
		return fmt.Sprintf("%s: a %s where the format expects another type", where, te.Value)
	}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Sprintf("syntax error at offset %d: %s", se.Offset, se.Error())
	}
	return oneLine(kinBisType.ReplaceAllString(strings.ReplaceAll(err.Error(), " Go struct", ""), "$1"))
}

// kinBisType matches the internal types kin-openapi decodes through
// ("type SchemaBis Schema" in its UnmarshalJSON methods, to skip the custom
// decoder): their names leak into encoding/json messages ("field
// SchemaBis.type"), and the reader knows the type as Schema. Only these
// names are matched, so a word such as "Bismuth" in a message survives.
var kinBisType = regexp.MustCompile(`\b(Components|Contact|Discriminator|Encoding|Example|ExternalDocs|Info|License|Link|MediaType|OAuthFlow|OAuthFlows|Operation|Parameter|PathItem|RequestBody|Response|Schema|SecurityScheme|Server|ServerVariable|T|Tag|XML)Bis\b`)

func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 300 {
		s = s[:297] + "..."
	}
	return s
}

// validate runs kin-openapi's full load and strict validation. It is slow
// and memory hungry on large specs, so only `specgate check` asks for it.
func validate(ctx context.Context, v3 []byte, opts Options) []string {
	doc := &openapi3.T{}
	if err := json.Unmarshal(v3, doc); err != nil {
		return []string{"validation: " + jsonErrorText(err)}
	}
	if err := newLoader(ctx, opts).ResolveRefsIn(doc, nil); err != nil {
		return []string{"validation: " + oneLine(err.Error())}
	}
	err := doc.Validate(ctx,
		openapi3.DisableExamplesValidation(),
		openapi3.DisableSchemaDefaultsValidation(),
		openapi3.DisableSchemaPatternValidation(),
	)
	if err == nil {
		return nil
	}
	return []string{"validation: " + oneLine(err.Error())}
}

// firstSentences trims s to at most max bytes at a sentence or word end.
func firstSentences(s string, max int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) <= max {
		return s
	}
	cut := s[:max]
	if i := strings.LastIndex(cut, ". "); i > max/3 {
		return cut[:i+1]
	}
	if i := strings.LastIndexByte(cut, ' '); i > 0 {
		cut = cut[:i]
	}
	return cut + "…"
}
