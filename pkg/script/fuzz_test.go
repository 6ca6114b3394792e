package script

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

// recordingCaller keeps the arguments of the last api.invoke.
type recordingCaller struct {
	fakeCaller
	got *Args
}

func (r *recordingCaller) Invoke(ctx context.Context, id string, a Args) (*Response, error) {
	r.got = &a
	return &Response{StatusCode: 200}, nil
}

// FuzzInvokeArguments: whatever object a script hands api.invoke, what
// crosses into the call is plain JSON of the documented shape, or the
// script gets validation_failed; nothing panics and no getter, function or
// prototype reaches the call.
func FuzzInvokeArguments(f *testing.F) {
	for _, s := range []string{
		`{parameters: {n: 1}}`, `{parameters: {n: 1n}}`, `{requestBody: (() => { const a = {}; a.a = a; return a; })()}`,
		`{get parameters() { throw new Error("getter") }}`, `{parameters: {toJSON() { return {x: 1}; }}}`,
		`{pages: "2"}`, `{headers: {a: 1}}`, `Object.create({parameters: {n: 1}})`, `{contentType: 7}`,
		`new Proxy({}, {get: () => { throw 1; }})`, `{parameters: [1, 2]}`, `{__proto__: {pages: 2}}`, `"str"`, `42`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, expr string) {
		if len(expr) > 512 || strings.ContainsAny(expr, "`") {
			return
		}
		c := &recordingCaller{}
		code := "let a; try { a = (" + expr + "); } catch (e) { return 'bad expression'; }\n" +
			"try { await api.invoke('t.get', a); return 'sent'; } catch (e) { return e.code || String(e); }"
		res, err := Run(t.Context(), code, c, Options{Timeout: 2 * time.Second})
		if err != nil {
			var se *Error
			if !errors.As(err, &se) {
				t.Fatalf("not a script error: %v", err)
			}
			return
		}
		var out string
		_ = json.Unmarshal(res.Value, &out)
		if out == "sent" {
			if c.got == nil {
				t.Fatal("sent, but the caller saw no call")
			}
			if _, err := json.Marshal(c.got); err != nil {
				t.Fatalf("the arguments that crossed are not JSON: %v", err)
			}
		} else if c.got != nil && out != "sent" {
			t.Fatalf("the caller saw a call the script was told failed (%q)", out)
		}
	})
}
