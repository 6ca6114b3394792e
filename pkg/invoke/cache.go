package invoke

import "encoding/json"

// cacheKey identifies a call by principal, the fingerprint of the upstream
// credentials it sends, endpoint and arguments; encoding/json sorts map
// keys, so equal arguments give equal keys. The principal and the
// credentials are part of it: no caller is served an answer fetched for
// another, or with other credentials.
func cacheKey(principal, credentials, id string, in Args, pages int) string {
	return principal + "\x00" + credentials + "\x00" + id + "\x00" + string(argsText(in, pages))
}

// argsText is a call's arguments as one text that is the same for the same
// arguments (encoding/json sorts map keys): what identifies a call for the
// result cache and the argument-keyed cooldown.
func argsText(in Args, pages int) []byte {
	b, _ := json.Marshal(struct {
		P map[string]any    `json:"p,omitempty"`
		B any               `json:"b,omitempty"`
		H map[string]string `json:"h,omitempty"`
		C string            `json:"c,omitempty"`
		N int               `json:"n,omitempty"`
	}{in.Parameters, in.RequestBody, in.Headers, in.ContentType, pages})
	return b
}
