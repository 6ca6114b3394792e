package mcpserver

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/specgate/specgate/pkg/serve"
)

// TestStdioProgressComesBeforeTheAnswer: over stdio, every progress
// notification of a run_script call is written before the call's answer,
// for each of many runs. Without the wait in handlerOf, mcp-go's
// notification goroutine can write a run's last progress after its answer,
// where a client drops it.
func TestStdioProgressComesBeforeTheAnswer(t *testing.T) {
	f := newFixture(t, 0)
	const runs, calls = 40, 3
	ctx := t.Context()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- serve.Stdio(ctx, f.srv, inR, outW) }()
	t.Cleanup(func() {
		inW.Close()
		go func() { _, _ = io.Copy(io.Discard, outR) }()
		<-done
	})
	send := func(line string) {
		t.Helper()
		if _, err := io.WriteString(inW, line+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	sc := bufio.NewScanner(outR)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	next := func() map[string]any {
		t.Helper()
		if !sc.Scan() {
			t.Fatalf("stdout ended: %v", sc.Err())
		}
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("bad line %q", sc.Text())
		}
		return m
	}
	send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	next()
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	code := strings.Repeat(`await api.invoke("petstore.getPetById", {parameters: {petId: 1}}); `, calls)
	for run := 1; run <= runs; run++ {
		args, _ := json.Marshal(map[string]any{"code": code})
		send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"run_script","arguments":%s,"_meta":{"progressToken":"p%d"}}}`, run, args, run))
		var got []float64
		for {
			m := next()
			if m["method"] == "notifications/progress" {
				p, _ := m["params"].(map[string]any)
				if p["progressToken"] != fmt.Sprintf("p%d", run) {
					t.Fatalf("run %d: progress of another run: %v", run, p)
				}
				got = append(got, p["progress"].(float64))
				continue
			}
			if m["id"] != float64(run) {
				t.Fatalf("run %d: unexpected line %v", run, m)
			}
			if res, _ := m["result"].(map[string]any); res == nil || res["isError"] == true {
				t.Fatalf("run %d: %v", run, m)
			}
			break
		}
		if len(got) != calls || got[calls-1] != calls {
			t.Fatalf("run %d: progress before the answer %v, want 1..%d", run, got, calls)
		}
	}
}
