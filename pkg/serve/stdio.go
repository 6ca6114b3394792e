package serve

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log"
	"log/slog"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/specgate/specgate/pkg/rpcmsg"
)

// Stdio serves b on in and out until ctx ends or in closes. Only protocol
// goes to out; errors go to b's logger. Each line is read once
// (rpcmsg.Read): a task request is answered here from the run records, as
// over HTTP, so a task is a run on every transport and mcp-go keeps none;
// any other message goes to mcp-go, rewritten only when its arguments hold
// a number mcp-go cannot decode.
func Stdio(ctx context.Context, b Backend, in io.Reader, out io.Writer) error {
	std := server.NewStdioServer(b.MCP())
	std.SetErrorLogger(log.New(slogWriter{b.Logger()}, "", 0))
	order := b.StdioOrder()
	order.start()
	w := &syncWriter{w: orderedWriter{w: out, order: order}}
	rd := newLineReader(in)
	rd.divert = func(m *rpcmsg.Message, msg []byte) bool { return divertTask(ctx, b, m, msg, w) }
	return std.Listen(ctx, rd, w)
}

// divertTask takes a task request read on stdio and answers it on w from
// its own goroutine, which ends with the answer (or ctx).
func divertTask(ctx context.Context, b Backend, m *rpcmsg.Message, msg []byte, w io.Writer) bool {
	if !b.IsTask(m) {
		return false
	}
	write := func(resp map[string]any) {
		out, err := json.Marshal(resp)
		if err == nil {
			_, _ = w.Write(append(out, '\n'))
		}
	}
	if _, ok := canonicalID(m.ID); !ok {
		write(map[string]any{"jsonrpc": mcp.JSONRPC_VERSION, "id": nil,
			"error": map[string]any{"code": mcp.INVALID_REQUEST, "message": "a task request needs a string or number id"}})
		return true
	}
	go write(b.AnswerTask(ctx, m, msg))
	return true
}

// lineReader reads each newline-delimited message from r once, for the
// stdio transport: divert may take it, else mcp-go reads it as
// Message.Rewrite gives it. It starts no goroutine.
type lineReader struct {
	r   *bufio.Reader
	buf []byte
	err error
	// divert, if set, may take a message for itself: it is then not read.
	divert func(m *rpcmsg.Message, msg []byte) bool
}

func newLineReader(r io.Reader) *lineReader {
	return &lineReader{r: bufio.NewReaderSize(r, 64<<10)}
}

func (l *lineReader) Read(p []byte) (int, error) {
	for len(l.buf) == 0 {
		if l.err != nil {
			return 0, l.err
		}
		line, err := l.r.ReadBytes('\n')
		l.err = err
		if len(line) > 0 {
			body := bytes.TrimRight(line, "\r\n")
			// A line that is not one JSON value goes to mcp-go as it is,
			// which answers the parse error. A key problem is not refused
			// here: stdio has one client, the user's own, and the tool's
			// decode refuses one in arguments.
			if m, _ := rpcmsg.Read(body); m != nil {
				out := m.Rewrite()
				if l.divert != nil && l.divert(m, out) {
					continue
				}
				if len(out) != len(body) {
					line = append(out, '\n')
				}
			}
			l.buf = line
		}
	}
	n := copy(p, l.buf)
	l.buf = l.buf[n:]
	return n, nil
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

type slogWriter struct{ log *slog.Logger }

func (w slogWriter) Write(p []byte) (int, error) {
	w.log.Warn("stdio", "msg", string(p))
	return len(p), nil
}
