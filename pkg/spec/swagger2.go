package spec

import (
	"slices"
	"strings"

	"github.com/getkin/kin-openapi/openapi2"
	"github.com/getkin/kin-openapi/openapi3"
)

// formBodies keeps, for each Swagger 2.0 operation with formData
// parameters, only the form media types of its converted request body.
// openapi2conv gives such a body every type the operation consumes, and the
// content map comes back sorted: Slack's methods (consumes form, then JSON)
// offered application/json first, a type formData is never sent in (Slack,
// and Prism, answer 415). A file parameter keeps multipart/form-data only;
// an operation that consumes no form type gets the one Swagger 2.0 implies,
// application/x-www-form-urlencoded (multipart/form-data with a file).
func formBodies(doc2 *openapi2.T, doc *openapi3.T) {
	if doc.Paths == nil {
		return
	}
	for path, item2 := range doc2.Paths {
		item := doc.Paths.Value(path)
		if item2 == nil || item == nil {
			continue
		}
		for method, op2 := range item2.Operations() {
			op := item.GetOperation(method)
			if op2 == nil || op == nil || op.RequestBody == nil || op.RequestBody.Value == nil {
				continue
			}
			form, file := false, false
			for _, p := range slices.Concat(item2.Parameters, op2.Parameters) {
				if p != nil && p.In == "formData" {
					form = true
					file = file || p.Type.Is("file")
				}
			}
			if !form {
				continue
			}
			content := op.RequestBody.Value.Content
			keep := openapi3.Content{}
			for ct, media := range content {
				base := mediaType(ct)
				if base == "multipart/form-data" || (!file && base == "application/x-www-form-urlencoded") {
					keep[ct] = media
				}
			}
			if len(keep) == 0 {
				var media *openapi3.MediaType
				for _, m := range content {
					media = m
					break
				}
				if media == nil {
					continue
				}
				if file {
					keep["multipart/form-data"] = media
				} else {
					keep["application/x-www-form-urlencoded"] = media
				}
			}
			op.RequestBody.Value.Content = keep
		}
	}
}

func mediaType(ct string) string {
	ct, _, _ = strings.Cut(ct, ";")
	return strings.ToLower(strings.TrimSpace(ct))
}
