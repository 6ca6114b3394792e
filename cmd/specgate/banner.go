package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/specgate/specgate/pkg/config"
)

// banner is what serve --http says at start: where a client connects,
// the client config to paste, and the governance page.
type banner struct {
	// url is /mcp at an address a client can use; local is the same on
	// loopback when url names this host by its name ("" otherwise).
	url, local string
	// bearer says the server wants a bearer token (team mode).
	bearer bool
	page   string
}

// newBanner describes a server listening on addr. A wildcard listen
// (0.0.0.0, ::) is not an address to connect to: the URL names this host
// by its name, and loopback beside it.
func newBanner(addr net.Addr, bearer bool, page string) banner {
	b := banner{bearer: bearer, page: page}
	host, port, err := net.SplitHostPort(addr.String())
	if err != nil {
		b.url = "http://" + addr.String() + "/mcp"
		return b
	}
	if ip, err := netip.ParseAddr(host); err == nil && ip.IsUnspecified() {
		b.local = "http://" + net.JoinHostPort("127.0.0.1", port) + "/mcp"
		if name, err := os.Hostname(); err == nil && name != "" && name != "localhost" {
			b.url = "http://" + net.JoinHostPort(name, port) + "/mcp"
		} else {
			b.url, b.local = b.local, ""
		}
		b.page = strings.Replace(b.page, "http://"+addr.String(), strings.TrimSuffix(b.url, "/mcp"), 1)
		return b
	}
	b.url = "http://" + net.JoinHostPort(host, port) + "/mcp"
	return b
}

// bearerPlaceholder stands for a client's token in the snippet: the
// banner never prints a configured token.
const bearerPlaceholder = "Bearer <your token>"

// clientEntry is one server of an MCP client config, as Claude Desktop,
// Claude Code, Cursor and VS Code read it.
type clientEntry struct {
	Type    string            `json:"type"`
	URL     string            `json:"url"`
	Headers map[string]string `json:"headers,omitempty"`
}

// client is the MCP client config for the server.
func (b banner) client() map[string]map[string]clientEntry {
	e := clientEntry{Type: "http", URL: b.url}
	if b.bearer {
		e.Headers = map[string]string{"Authorization": bearerPlaceholder}
	}
	return map[string]map[string]clientEntry{"mcpServers": {"specgate": e}}
}

// write prints the banner for a person, or with JSON logs as one log
// line whose fields hold it, so that every line on stderr is JSON.
func (b banner) write(w io.Writer, log *slog.Logger) {
	if jsonLogs(log) {
		args := []any{"url", b.url}
		if b.local != "" {
			args = append(args, "local_url", b.local)
		}
		args = append(args, "client_config", b.client(), "governance_page", b.page)
		log.Info("serving MCP (streamable HTTP)", args...)
		return
	}
	fmt.Fprintf(w, "specgate serving MCP (streamable HTTP) at %s\n", b.url)
	if b.local != "" {
		fmt.Fprintf(w, "(on this machine: %s)\n", b.local)
	}
	var snippet bytes.Buffer
	enc := json.NewEncoder(&snippet)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	enc.Encode(b.client())
	fmt.Fprintf(w, "\nClient config:\n%s", snippet.Bytes())
	if b.bearer {
		fmt.Fprintln(w, "Each client sends its own token (http.auth.tokens, or a JWT the issuer signed) in place of <your token>.")
	}
	fmt.Fprintf(w, "Governance page: %s\n", b.page)
}

// redisLogger sends go-redis's own log lines through slog, so that with
// JSON logs they are JSON too.
type redisLogger struct{ log *slog.Logger }

func (l redisLogger) Printf(ctx context.Context, format string, v ...any) {
	l.log.WarnContext(ctx, "redis client: "+strings.TrimSpace(fmt.Sprintf(format, v...)))
}

// logRedisTo makes log go-redis's logger; it holds for the process.
func logRedisTo(log *slog.Logger) {
	if log != nil {
		redis.SetLogger(redisLogger{log})
	}
}

// jsonLogsRequested reports whether args ask for --log-format json, known
// before the flags parse so that a flag error is a JSON line too.
func jsonLogsRequested(args []string) bool {
	on := false
	for i, a := range args {
		switch {
		case a == "--":
			return on
		case a == "--log-format" || a == "-log-format":
			on = i+1 < len(args) && strings.EqualFold(args[i+1], "json")
		case strings.HasPrefix(a, "--log-format=") || strings.HasPrefix(a, "-log-format="):
			_, v, _ := strings.Cut(a, "=")
			on = strings.EqualFold(v, "json")
		}
	}
	return on
}

// jsonLogs reports whether log writes JSON lines (--log-format json).
func jsonLogs(log *slog.Logger) bool {
	_, ok := log.Handler().(*slog.JSONHandler)
	return ok
}

// authNeeded says whether serve --http asks clients for a bearer token.
func authNeeded(h *config.HTTP) bool {
	for _, t := range h.Auth.Tokens {
		if t.Token.Reveal() != "" {
			return true
		}
	}
	return h.Auth.JWT.Issuer != ""
}

// logError writes msg as one JSON log line at level error.
func logError(w io.Writer, msg string, args ...any) {
	slog.New(slog.NewJSONHandler(w, nil)).Error(msg, args...)
}
