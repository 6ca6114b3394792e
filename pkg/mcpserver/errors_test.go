package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/specgate/specgate/pkg/answer"
	"github.com/specgate/specgate/pkg/codes"
	"github.com/specgate/specgate/pkg/invoke"
	"github.com/specgate/specgate/pkg/ratelimit"
	"github.com/specgate/specgate/pkg/script"
)

// storeFault is an error type no package declares, as a bug or a new
// dependency might return one.
type storeFault struct{ path string }

func (e *storeFault) Error() string { return "open " + e.path + ": permission denied" }

var requestIDRE = regexp.MustCompile(`^req-[0-9a-f]{12}$`)

// logLines decodes the JSON lines of a slog.JSONHandler.
func logLines(t *testing.T, out string) []map[string]any {
	t.Helper()
	var lines []map[string]any
	for l := range strings.SplitSeq(strings.TrimSpace(out), "\n") {
		if l == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("log line %q: %v", l, err)
		}
		lines = append(lines, m)
	}
	return lines
}

// checkInternal fails unless obj is the internal answer: a fresh request
// id, the fixed message, none of goText; and the log holds exactly one
// error line with that id and the whole goText.
func checkInternal(t *testing.T, obj *ErrorObject, log, goText string) {
	t.Helper()
	if obj.Code != codes.Internal || !requestIDRE.MatchString(obj.RequestID) || obj.Retryable {
		t.Fatalf("got code %q, requestId %q, retryable %v; want internal, req-<12 hex>, false", obj.Code, obj.RequestID, obj.Retryable)
	}
	if want := "specgate failed on this call; the server log has request id " + obj.RequestID; obj.Message != want {
		t.Errorf("message %q, want %q", obj.Message, want)
	}
	if text := string(mustJSON(obj)); strings.Contains(text, "permission denied") || strings.Contains(text, "/etc/specgate") {
		t.Errorf("the model reads Go error text: %s", text)
	}
	lines := logLines(t, log)
	if len(lines) != 1 {
		t.Fatalf("%d log lines, want 1: %s", len(lines), log)
	}
	if l := lines[0]; l["level"] != "ERROR" || l["requestId"] != obj.RequestID || !strings.Contains(fmt.Sprint(l["err"]), goText) {
		t.Errorf("log line %v, want level ERROR, requestId %s and err with %q", l, obj.RequestID, goText)
	}
}

// TestMapErrorUnexpectedErrorIsInternal: an error of no known kind, bare
// or wrapped, reaches the model as internal with a request id only, and
// the server log has the id with the whole error.
func TestMapErrorUnexpectedErrorIsInternal(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for _, err := range []error{
		errors.New("open /etc/specgate/answers.db: permission denied"),
		&storeFault{path: "/etc/specgate/answers.db"},
		fmt.Errorf("answers: %w", &storeFault{path: "/etc/specgate/answers.db"}),
	} {
		t.Run(fmt.Sprintf("%T", err), func(t *testing.T) {
			var log syncBuffer
			obj := mapError(slog.New(slog.NewJSONHandler(&log, nil)), err, now)
			checkInternal(t, obj, log.String(), err.Error())
			if again := mapError(slog.New(slog.DiscardHandler), err, now); again.RequestID == obj.RequestID {
				t.Errorf("two failures share request id %s", obj.RequestID)
			}
		})
	}
}

// TestMapErrorKnownKindsLogNothing: a typed error is the model's to read
// and no fault of specgate's, so it is not logged as one; codeOf gives
// the same codes without a log (an attempt's error) and internal for the
// unknown.
func TestMapErrorKnownKindsLogNothing(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		err  error
		code string
	}{
		{fmt.Errorf("page 2: %w", &invoke.HTTPError{StatusCode: 503}), codes.HTTPError},
		{&answer.JQError{Kind: answer.JQTimeout, Msg: "the filter ran past 1s"}, codes.Timeout},
		{&answer.JQError{Kind: answer.JQInvalid, Msg: "input is not allowed"}, codes.ValidationFailed},
		{&ratelimit.QueueError{Reason: ratelimit.QueueShutdown, Upstream: "api.example.com:443", RetryAfter: time.Second}, codes.QueueFull},
		{fmt.Errorf("call: %w", context.DeadlineExceeded), codes.Timeout},
		{errors.New("boom"), codes.Internal},
	} {
		var log syncBuffer
		obj := mapError(slog.New(slog.NewJSONHandler(&log, nil)), c.err, now)
		if obj.Code != c.code || codeOf(c.err) != c.code {
			t.Errorf("%v: mapError %s, codeOf %s, want %s", c.err, obj.Code, codeOf(c.err), c.code)
		}
		if logged := log.String() != ""; logged != (c.code == codes.Internal) {
			t.Errorf("%v: logged %v: %s", c.err, logged, log.String())
		}
	}
}

// TestMapErrorRetryableIsTheErrorsOwn: retryable is what the error says
// of itself, so the model and invoke's own retries agree: a 408 may
// succeed later as a 5xx may, a 4xx else not.
func TestMapErrorRetryableIsTheErrorsOwn(t *testing.T) {
	for status, want := range map[int]bool{400: false, 404: false, 408: true, 500: true, 503: true} {
		e := &invoke.HTTPError{StatusCode: status}
		if got := knownError(e, time.Time{}).Retryable; got != want || got != e.Retryable() {
			t.Errorf("%d: retryable %v, want %v", status, got, want)
		}
	}
}

// failingRunner fails every run with an error that is no *script.Error.
type failingRunner struct{}

func (failingRunner) Run(context.Context, string, script.Caller, script.Options) (*script.Result, error) {
	return nil, &storeFault{path: "/etc/specgate/worker.sock"}
}

// TestRunScriptRunnerFaultIsInternal: a runner that fails in a way no
// script error names answers run_script through the MCP client with
// internal, the run id and a request id, never its Go text; the log has
// both ids and the text.
func TestRunScriptRunnerFaultIsInternal(t *testing.T) {
	var log syncBuffer
	f := newPagingFixture(t, pagingOptions{server: Options{Scripts: ScriptOptions{Runner: failingRunner{}},
		Logger: slog.New(slog.NewJSONHandler(&log, nil))}})
	a := callText(t, f.client, "run_script", map[string]any{"code": "return 1"})
	if !a.isErr {
		t.Fatalf("run_script answered %s, want an error", a.text)
	}
	var env struct{ Error *ErrorObject }
	if err := json.Unmarshal([]byte(a.text), &env); err != nil || env.Error == nil {
		t.Fatalf("%s: %v", a.text, err)
	}
	checkInternal(t, env.Error, log.String(), "open /etc/specgate/worker.sock: permission denied")
	if l := logLines(t, log.String()); env.Error.RunID == "" || l[0]["run"] != env.Error.RunID {
		t.Errorf("runId %q, log line %v: want the run's id in both", env.Error.RunID, l[0])
	}
}
