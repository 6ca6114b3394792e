package script

import (
	"errors"
	"strings"
	"testing"

	"github.com/specgate/specgate/pkg/codes"
)

// On Windows a worker would run without OS limits: run_script refuses,
// saying why, and starts nothing.
func TestWorkerRefusesOnWindows(t *testing.T) {
	w := &Worker{Path: "specgate-that-must-not-start.exe"}
	_, err := w.Run(t.Context(), "return 1", nil, Options{})
	var se *Error
	if !errors.As(err, &se) || se.Code != codes.ScriptError || !strings.Contains(se.Message, "not available on Windows") {
		t.Fatalf("got %v, want a script_error saying run_script is not available on Windows", err)
	}
}
