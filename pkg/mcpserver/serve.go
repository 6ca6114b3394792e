package mcpserver

import (
	"context"
	"encoding/json"
	"io"
	"log"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// ServeStdio serves MCP on in and out until ctx ends or in closes. Only
// protocol goes to out; errors go to the logger.
func (s *Server) ServeStdio(ctx context.Context, in io.Reader, out io.Writer) error {
	std := server.NewStdioServer(s.mcp)
	std.SetErrorLogger(log.New(slogWriter{s}, "", 0))
	s.order.start()
	w := &syncWriter{w: orderedWriter{w: out, order: &s.order}}
	rd := newLineRewriter(in)
	// Tasks are answered here from the run records, as over HTTP, so a
	// task is a run on every transport and mcp-go keeps none.
	rd.divert = func(msg []byte) bool { return s.divertTask(ctx, msg, w) }
	return std.Listen(ctx, rd, w)
}

// divertTask takes a task request read on stdio and answers it on w from
// its own goroutine, which ends with the answer (or ctx).
func (s *Server) divertTask(ctx context.Context, msg []byte, w io.Writer) bool {
	var tm taskMessage
	var env struct {
		ID json.RawMessage `json:"id"`
	}
	if json.Unmarshal(msg, &tm) != nil || !tm.isTask() || json.Unmarshal(msg, &env) != nil {
		return false
	}
	write := func(resp map[string]any) {
		b, err := json.Marshal(resp)
		if err == nil {
			_, _ = w.Write(append(b, '\n'))
		}
	}
	if _, ok := canonicalID(env.ID); !ok {
		write(map[string]any{"jsonrpc": mcp.JSONRPC_VERSION, "id": nil,
			"error": map[string]any{"code": mcp.INVALID_REQUEST, "message": "a task request needs a string or number id"}})
		return true
	}
	go write(s.answerTask(ctx, msg, &tm, env.ID))
	return true
}

// syncWriter writes one message at a time: mcp-go's (each one Write) and
// the answers divertTask writes from its own goroutines.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (w *syncWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.w.Write(p)
}

type slogWriter struct{ s *Server }

func (w slogWriter) Write(p []byte) (int, error) {
	w.s.log.Warn("stdio", "msg", string(p))
	return len(p), nil
}
