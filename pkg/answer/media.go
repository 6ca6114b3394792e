package answer

import (
	"strings"
	"unicode/utf8"
)

// MediaBase returns the lower-case media type without parameters.
func MediaBase(ct string) string {
	ct, _, _ = strings.Cut(ct, ";")
	return strings.ToLower(strings.TrimSpace(ct))
}

// IsJSONType reports application/json and the +json types.
func IsJSONType(ct string) bool {
	b := MediaBase(ct)
	return b == "application/json" || strings.HasSuffix(b, "+json") || b == "text/json"
}

// IsTextType reports a media type (as MediaBase gives it) whose body is
// text: text/*, XML, JavaScript, form data, YAML, NDJSON, GraphQL.
func IsTextType(base string) bool {
	return strings.HasPrefix(base, "text/") || strings.HasSuffix(base, "+xml") || base == "application/xml" ||
		base == "application/javascript" || base == "application/x-www-form-urlencoded" ||
		base == "application/yaml" || base == "application/x-yaml" || strings.HasSuffix(base, "+yaml") ||
		base == "application/x-ndjson" || base == "application/graphql"
}

// Text returns data as valid UTF-8 text: a cut can split a character, and
// anything else invalid becomes U+FFFD.
func Text(data []byte) string {
	if utf8.Valid(data) {
		return string(data)
	}
	return strings.ToValidUTF8(string(data), "\uFFFD")
}

// ArgError is a request to read an answer that cannot be met as asked (jq
// on a body that is not JSON, a window over a body with no main array): a
// Strict view returns it, and the caller reports it as invalid arguments.
type ArgError struct {
	// Problems lists every problem, one short sentence each.
	Problems []string
}

func (e *ArgError) Error() string { return "invalid arguments: " + strings.Join(e.Problems, "; ") }

// Hint says what to do next.
func (e *ArgError) Hint() string {
	return "Fix the arguments and read the answer again: nothing was sent, so the call costs nothing."
}
