package mcpserver

import (
	"context"
	"io"
	"log"

	"github.com/mark3labs/mcp-go/server"
)

// ServeStdio serves MCP on in and out until ctx ends or in closes. Only
// protocol goes to out; errors go to the logger.
func (s *Server) ServeStdio(ctx context.Context, in io.Reader, out io.Writer) error {
	std := server.NewStdioServer(s.mcp)
	std.SetErrorLogger(log.New(slogWriter{s}, "", 0))
	s.order.start()
	return std.Listen(ctx, newLineRewriter(in), orderedWriter{w: out, order: &s.order})
}

type slogWriter struct{ s *Server }

func (w slogWriter) Write(p []byte) (int, error) {
	w.s.log.Warn("stdio", "msg", string(p))
	return len(p), nil
}
