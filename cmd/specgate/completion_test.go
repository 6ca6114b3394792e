package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// specgate completion bash|zsh|fish prints a script the shell reads, with
// every command and each command's flags as its help lists them.
func TestCompletionScripts(t *testing.T) {
	checks := map[string][]string{
		"bash": {"bash", "-n"},
		"zsh":  {"zsh", "-n"},
		"fish": {"fish", "--no-execute"},
	}
	for shell, check := range checks {
		t.Run(shell, func(t *testing.T) {
			code, out, errs := runCmd(t, "completion", shell)
			if code != 0 || errs != "" {
				t.Fatalf("exit %d: %s", code, errs)
			}
			for _, name := range commandOrder {
				if !strings.Contains(out, name) {
					t.Errorf("no command %s", name)
				}
			}
			for _, flag := range []string{"raw", "jq", "max-bytes", "params", "log-format", "timeout", "rate-limit-interval"} {
				if !strings.Contains(out, "--"+flag) && !strings.Contains(out, "-l "+flag) {
					t.Errorf("no flag --%s", flag)
				}
			}
			if _, err := exec.LookPath(check[0]); err != nil {
				t.Skipf("%s is not installed: the script's syntax is not checked", check[0])
			}
			file := filepath.Join(t.TempDir(), "specgate."+shell)
			if err := os.WriteFile(file, []byte(out), 0o600); err != nil {
				t.Fatal(err)
			}
			if msg, err := exec.Command(check[0], append(check[1:], file)...).CombinedOutput(); err != nil {
				t.Errorf("%s does not read it: %v\n%s", shell, err, msg)
			}
		})
	}

	if code, _, errs := runCmd(t, "completion", "powershell"); code != exitUsage || !strings.Contains(errs, "bash, zsh or fish") {
		t.Errorf("completion powershell: exit %d, %q", code, errs)
	}
}

// In bash the script completes what a user types.
func TestCompletionBashCompletes(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("bash is not installed")
	}
	_, script, _ := runCmd(t, "completion", "bash")
	file := filepath.Join(t.TempDir(), "specgate.bash")
	if err := os.WriteFile(file, []byte(script), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ line, want string }{
		{"specgate ser", "serve"},
		{"specgate invoke --ra", "--raw"},
		{"specgate serve --log-format ", "json"},
		{"specgate completion f", "fish"},
		{"specgate help run", "run-script"},
	} {
		words := strings.Split(tc.line, " ")
		cmd := exec.Command("bash", "-c", `source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(( $# - 1 )); _specgate; echo "${COMPREPLY[*]}"`, "bash", file)
		cmd.Args = append(cmd.Args, words...)
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), tc.want) {
			t.Errorf("%q: %v %q, want %s", tc.line, err, out, tc.want)
		}
	}
}
