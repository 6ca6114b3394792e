package mcpserver

import (
	"context"
	"encoding/json"
	"io"
	"log"
	"net/http"

	"github.com/mark3labs/mcp-go/server"
)

// ServeStdio serves MCP on in and out until ctx ends or in closes. Only
// protocol goes to out; errors go to the logger.
func (s *Server) ServeStdio(ctx context.Context, in io.Reader, out io.Writer) error {
	std := server.NewStdioServer(s.mcp)
	std.SetErrorLogger(log.New(slogWriter{s}, "", 0))
	return std.Listen(ctx, in, out)
}

type slogWriter struct{ s *Server }

func (w slogWriter) Write(p []byte) (int, error) {
	w.s.log.Warn("stdio", "msg", string(p))
	return len(p), nil
}

// HTTPHandler serves streamable HTTP MCP at /mcp, liveness at /healthz and
// readiness at /readyz. It holds no per-session state, so any replica can
// answer any request.
func (s *Server) HTTPHandler() http.Handler {
	mux := http.NewServeMux()
	streamable := server.NewStreamableHTTPServer(s.mcp,
		server.WithEndpointPath("/mcp"),
		server.WithStateLess(true),
	)
	mux.Handle("/mcp", streamable)
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"status":"ok"}` + "\n"))
	})
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		body := map[string]any{"status": "loading"}
		code := http.StatusServiceUnavailable
		if s.Ready() {
			st := s.state.Load()
			if st.err != nil {
				body = map[string]any{"status": "failed", "error": st.err.Error()}
			} else {
				code = http.StatusOK
				body = map[string]any{"status": "ready", "endpoints": st.cat.Len(), "specs": st.cat.SpecNames()}
				if len(st.failures) > 0 {
					body["failedSpecs"] = st.failures
				}
			}
		}
		w.WriteHeader(code)
		json.NewEncoder(w).Encode(body)
	})
	return mux
}
