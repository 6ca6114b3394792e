package config

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// planted is a recognisable secret; no printed form of a config may hold it.
const planted = "SECRET-c0ffee-4242"

func TestSecretsNeverPrinted(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "pw"), []byte(planted+"-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"PLANTED": planted}
	c, err := parse([]byte(`
specs:
  - name: s
    location: s.yaml
    headers: {X-Api-Key: "`+planted+`-header"}
    auth:
      key: {value: "${PLANTED}"}
      bearer: {token: "`+planted+`-token"}
      basic: {username: "`+planted+`-user", password_file: pw}
      oauth: {client_id: "`+planted+`-id", client_secret: "`+planted+`-cs"}
http:
  auth:
    tokens: [{token: "`+planted+`-inbound", subject: ada}]
store:
  redis_url: "redis://:`+planted+`-redis@127.0.0.1:6379/0"
`), "", dir, func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	if err != nil {
		t.Fatal(err)
	}
	// The values are there for the code that sends them.
	if got := c.Specs[0].Auth["basic"].Password.Reveal(); got != planted+"-file" {
		t.Fatalf("password from file = %q", got)
	}

	var outputs []string
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%X", "%d"} {
		outputs = append(outputs, fmt.Sprintf(verb, c), fmt.Sprintf(verb, *c), fmt.Sprintf(verb, c.Specs[0].Auth))
	}
	outputs = append(outputs, fmt.Sprint(c.Specs), fmt.Sprintln(c.Store.RedisURL), c.Store.RedisURL.String())
	js, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	ym, err := yaml.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	slog.New(slog.NewJSONHandler(&logs, nil)).Info("config", "config", c, "secret", c.Specs[0].Auth["key"].Value)
	slog.New(slog.NewTextHandler(&logs, nil)).Info("config", "config", c, "secret", c.Specs[0].Auth["key"].Value)
	outputs = append(outputs, string(js), string(ym), logs.String())

	c.Store.Backend = "bogus"
	c.Specs[0].Auth["key"] = Credential{Value: c.Specs[0].Auth["key"].Value, ValueFile: "x"}
	if err := c.Validate(); err != nil {
		outputs = append(outputs, err.Error())
	}

	for i, out := range outputs {
		if strings.Contains(out, planted) || strings.Contains(out, fmt.Sprintf("%x", planted)) {
			t.Errorf("output %d reveals the secret:\n%s", i, out)
		}
	}
	if !strings.Contains(string(js), `"value":"[redacted]"`) {
		t.Errorf("JSON does not show the redaction marker:\n%s", js)
	}
}

func TestSecretPrinting(t *testing.T) {
	set, unset := NewSecret("hunter2"), Secret{}
	tests := []struct {
		got, want string
	}{
		{fmt.Sprint(set), "[redacted]"},
		{fmt.Sprintf("%q", set), "[redacted]"},
		{fmt.Sprintf("%#v", set), `config.Secret("[redacted]")`},
		{fmt.Sprint(unset), ""},
		{fmt.Sprintf("%+v", struct{ S Secret }{set}), "{S:[redacted]}"},
		{fmt.Sprintf("%v", &set), "[redacted]"},
		{set.Reveal(), "hunter2"},
	}
	for i, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%d: got %q, want %q", i, tt.got, tt.want)
		}
	}
}
