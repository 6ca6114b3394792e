package mcpserver

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestAuditLineIsInertToAShell: the audit log's JSON strings kept '$' and
// '`' as they were, so an endpoint id or a principal holding
// "$(touch${IFS}PWNED)" ran when bash read the file. Each call is one line
// that decodes to the same strings, with nothing a shell expands.
func TestAuditLineIsInertToAShell(t *testing.T) {
	tests := []struct {
		name     string
		endpoint string
		p        Principal
	}{
		{"command substitution in the endpoint", "h.ping$(touch${IFS}PWNED)", Principal{Subject: "ada"}},
		{"backticks and quotes in the principal", "h.ok", Principal{Subject: "ada`touch PWNED`\"", Org: "x'$(touch PWNED)'"}},
		{"a newline and a quote break no line", "h.a\n\"}\n$(touch PWNED)", Principal{Subject: "b\r\n{\"x\":1}\u2028"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			buf := &lockedBuffer{}
			s := New(Options{Audit: buf})
			s.audit(WithPrincipal(t.Context(), tt.p), auditRecord{Endpoint: tt.endpoint, Outcome: "ok"})
			line := buf.String()
			if strings.Count(line, "\n") != 1 || !strings.HasSuffix(line, "\n") {
				t.Fatalf("not one line: %q", line)
			}
			if i := strings.IndexAny(line, "$`\r\u2028"); i >= 0 {
				t.Errorf("line holds %q: %s", line[i], line)
			}
			var got auditRecord
			if err := json.Unmarshal([]byte(line), &got); err != nil {
				t.Fatal(err)
			}
			if got.Endpoint != tt.endpoint || got.Principal != tt.p.String() {
				t.Errorf("decoded endpoint %q principal %q, want %q %q", got.Endpoint, got.Principal, tt.endpoint, tt.p.String())
			}
			bash, err := exec.LookPath("bash")
			if err != nil {
				return
			}
			dir := t.TempDir()
			file := filepath.Join(dir, "audit.jsonl")
			if err := os.WriteFile(file, []byte(line), 0o600); err != nil {
				t.Fatal(err)
			}
			cmd := exec.CommandContext(t.Context(), bash, "--norc", "--noprofile", file)
			cmd.Dir = dir
			_ = cmd.Run() // the line is no command: bash fails, and must run nothing
			if _, err := os.Stat(filepath.Join(dir, "PWNED")); err == nil {
				t.Errorf("bash reading the audit line ran the command in it: %s", line)
			}
		})
	}
}
