package spec

import "testing"

// A FastAPI app's spec at /openapi.json was named "openapi", so its ids
// were openapi.read_item (issue 33 item 1): a generic file name gives way
// to the title.
func TestGenericFileNameTakesTheTitle(t *testing.T) {
	tests := []struct {
		location, doc, want string
	}{
		{"http://127.0.0.1:8000/openapi.json", `{"info":{"title":"Read Item API"}}`, "read-item-api"},
		{"http://127.0.0.1:8080/v3/api-docs", `{"info":{"title":"Pet Clinic"}}`, "pet-clinic"},
		{"specs/swagger.yaml", `{"info":{"title":"  Ünïcode & Co. v2  "}}`, "n-code-co-v2"},
		{"https://x.test/openapi.json", `{"info":{"title":"A very long title that goes on and on past the bound"}}`, "a-very-long-title-that-goes-on"},
		{"https://x.test/openapi.json", `{"info":{"title":"!!!"}}`, "openapi"},
		{"https://x.test/openapi.json", `not json`, "openapi"},
		{"specs/petstore.yaml", `{"info":{"title":"Swagger Petstore"}}`, "petstore"},
	}
	for _, tt := range tests {
		t.Run(tt.location, func(t *testing.T) {
			if got := defaultName(tt.location, []byte(tt.doc)); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

// An API key that goes in Authorization was written bare by init, and
// every first call was a 401 (issue 33 item 4): the scheme says the word
// the key needs before it.
func TestAuthPrefixOfAuthorizationAPIKeys(t *testing.T) {
	tests := []struct {
		name, description, want string
	}{
		{"BearerToken", "Bearer Token authentication", "Bearer"},
		{"BotToken", "Discord bot token", "Bot"},
		{"apiToken", "Pass the API token as the Authorization header value prefixed with SSWS: `Authorization: SSWS {API Token}`", "SSWS"},
		{"tokenAuth", "Use `Authorization: Token <key>`", "Token"},
		{"ApiKeyAuth", "Your API key", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := authPrefix(tt.name, tt.description); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}
