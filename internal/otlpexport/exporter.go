// Package otlpexport sends OpenTelemetry spans to an OTLP/HTTP receiver as
// protobuf. It exists instead of the SDK's otlptracehttp, which brings grpc
// and grpc-gateway into the binary (3.5 MB, 4-5 MB of settled RSS) for a
// feature that is off unless configured: the request is one repeated field
// of ResourceSpans, encoded here without the collector's gRPC service types.
package otlpexport

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// Options configure an Exporter.
type Options struct {
	// URL is where batches are POSTed: the receiver's traces URL, like
	// "http://127.0.0.1:4318/v1/traces". Required.
	URL string
	// Headers are set on every request (authentication for a hosted
	// receiver). Nil: none.
	Headers map[string]string
	// Gzip compresses each request body. False: sent as is.
	Gzip bool
	// Timeout bounds one attempt, from sending the batch to reading the
	// receiver's answer. Zero: 10s.
	Timeout time.Duration
	// MaxAttempts bounds the tries of one batch when the receiver answers
	// 429, 502, 503 or 504. Zero: 5.
	MaxAttempts int
	// Backoff is the wait after the first refused attempt, doubled after
	// each up to 30s; a longer Retry-After wins. Zero: 1s.
	Backoff time.Duration
	// Client sends the requests. Nil: a client of the exporter's own, on a
	// copy of http.DefaultTransport (proxy from the environment).
	Client *http.Client
}

const (
	defaultTimeout     = 10 * time.Second
	defaultMaxAttempts = 5
	defaultBackoff     = time.Second
	maxBackoff         = 30 * time.Second
	// maxAnswer bounds what is read of a receiver's answer.
	maxAnswer = 64 << 10
)

// ErrShutdown is returned by ExportSpans after Shutdown.
var ErrShutdown = errors.New("otlp exporter is shut down")

// Exporter is an sdktrace.SpanExporter that sends each batch as one
// ExportTraceServiceRequest over OTLP/HTTP. It is safe for concurrent use;
// the SDK's batch processor calls it from one goroutine.
type Exporter struct {
	opts   Options
	client *http.Client

	// done is closed by Shutdown: retry waits end and no batch is sent.
	done     chan struct{}
	shutOnce sync.Once
}

var _ sdktrace.SpanExporter = (*Exporter)(nil)

// New returns an Exporter for opts; it does no I/O.
func New(opts Options) (*Exporter, error) {
	if opts.URL == "" {
		return nil, errors.New("otlp exporter: no URL")
	}
	if opts.Timeout <= 0 {
		opts.Timeout = defaultTimeout
	}
	if opts.MaxAttempts <= 0 {
		opts.MaxAttempts = defaultMaxAttempts
	}
	if opts.Backoff <= 0 {
		opts.Backoff = defaultBackoff
	}
	c := opts.Client
	if c == nil {
		c = &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
	}
	return &Exporter{opts: opts, client: c, done: make(chan struct{})}, nil
}

// ExportSpans sends spans as one request, retrying a refused one (429,
// 502, 503, 504) up to MaxAttempts times while ctx allows the wait.
func (e *Exporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	select {
	case <-e.done:
		return ErrShutdown
	default:
	}
	rss := resourceSpans(spans)
	if len(rss) == 0 {
		return nil
	}
	body, err := encodeRequest(rss)
	if err != nil {
		return err
	}
	if e.opts.Gzip {
		if body, err = gzipped(body); err != nil {
			return err
		}
	}
	return e.send(ctx, body)
}

// Shutdown stops retries in progress and refuses later batches; the SDK
// flushes its spans before it calls it. Idle connections are closed.
func (e *Exporter) Shutdown(ctx context.Context) error {
	e.shutOnce.Do(func() {
		close(e.done)
		e.client.CloseIdleConnections()
	})
	return ctx.Err()
}

func (e *Exporter) send(ctx context.Context, body []byte) error {
	backoff := e.opts.Backoff
	for attempt := 1; ; attempt++ {
		err := e.post(ctx, body)
		var se *StatusError
		if err == nil || !errors.As(err, &se) || !se.Retryable() {
			return err
		}
		if attempt >= e.opts.MaxAttempts {
			return fmt.Errorf("otlp export: gave up after %d attempts: %w", attempt, err)
		}
		wait := max(backoff, se.RetryAfter)
		backoff = min(2*backoff, maxBackoff)
		if deadline, ok := ctx.Deadline(); ok && time.Until(deadline) < wait {
			return fmt.Errorf("otlp export: the retry wait of %v passes the export's deadline: %w", wait, err)
		}
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return errors.Join(ctx.Err(), err)
		case <-e.done:
			t.Stop()
			return errors.Join(ErrShutdown, err)
		}
	}
}

// post makes one attempt; a receiver's refusal is a *StatusError.
func (e *Exporter) post(ctx context.Context, body []byte) error {
	ctx, cancel := context.WithTimeout(ctx, e.opts.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.opts.URL, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("otlp export: %w", err)
	}
	for k, v := range e.opts.Headers {
		req.Header.Set(k, v)
	}
	req.Header.Set("Content-Type", "application/x-protobuf")
	req.Header.Set("User-Agent", "specgate")
	if e.opts.Gzip {
		req.Header.Set("Content-Encoding", "gzip")
	}
	resp, err := e.client.Do(req)
	if err != nil {
		return fmt.Errorf("otlp export: %w", err)
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	if err != nil {
		return fmt.Errorf("otlp export: reading the answer: %w", err)
	}
	if resp.StatusCode/100 == 2 {
		if strings.HasPrefix(resp.Header.Get("Content-Type"), "application/x-protobuf") {
			return partialSuccess(answer)
		}
		return nil
	}
	return &StatusError{
		StatusCode: resp.StatusCode,
		RetryAfter: retryAfter(resp.Header.Get("Retry-After"), time.Now()),
		Message:    shorten(strings.TrimSpace(string(answer)), 200),
	}
}

// StatusError is a receiver's answer other than 2xx.
type StatusError struct {
	StatusCode int
	// RetryAfter is the receiver's Retry-After; zero when absent.
	RetryAfter time.Duration
	// Message is the start of the answer's body.
	Message string
}

func (e *StatusError) Error() string {
	msg := "otlp receiver answered " + strconv.Itoa(e.StatusCode)
	if e.Message != "" {
		msg += ": " + e.Message
	}
	return msg
}

// Retryable reports whether the OTLP specification lets the batch be sent
// again: the receiver was throttling or briefly unavailable.
func (e *StatusError) Retryable() bool {
	switch e.StatusCode {
	case http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true
	}
	return false
}

// retryAfter reads a Retry-After header, in seconds or as an HTTP date
// relative to now; anything else is zero.
func retryAfter(v string, now time.Time) time.Duration {
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseInt(v, 10, 64); err == nil {
		if s <= 0 {
			return 0
		}
		return time.Duration(min(s, int64(time.Hour/time.Second))) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now), 0)
	}
	return 0
}

// encodeRequest writes an ExportTraceServiceRequest: field 1, repeated
// ResourceSpans, is its only field.
func encodeRequest(rss []*tracepb.ResourceSpans) ([]byte, error) {
	var b []byte
	mo := proto.MarshalOptions{UseCachedSize: true}
	for _, rs := range rss {
		b = protowire.AppendTag(b, 1, protowire.BytesType)
		b = protowire.AppendVarint(b, uint64(proto.Size(rs)))
		var err error
		if b, err = mo.MarshalAppend(b, rs); err != nil {
			return nil, fmt.Errorf("otlp export: encoding spans: %w", err)
		}
	}
	return b, nil
}

// partialSuccess reads an ExportTraceServiceResponse: field 1 is the
// partial success, with rejected_spans (1) and error_message (2). A
// receiver that rejected spans is reported as an error.
func partialSuccess(b []byte) error {
	ps, ok := field(b, 1)
	if !ok {
		return nil
	}
	var rejected uint64
	var msg string
	for len(ps) > 0 {
		num, typ, n := protowire.ConsumeTag(ps)
		if n < 0 {
			return nil
		}
		ps = ps[n:]
		switch {
		case num == 1 && typ == protowire.VarintType:
			rejected, n = protowire.ConsumeVarint(ps)
		case num == 2 && typ == protowire.BytesType:
			var s []byte
			s, n = protowire.ConsumeBytes(ps)
			msg = string(s)
		default:
			n = protowire.ConsumeFieldValue(num, typ, ps)
		}
		if n < 0 {
			return nil
		}
		ps = ps[n:]
	}
	if rejected == 0 && msg == "" {
		return nil
	}
	return fmt.Errorf("otlp receiver rejected %d spans: %s", rejected, shorten(msg, 200))
}

// field returns the last length-delimited field num of a message.
func field(b []byte, want protowire.Number) ([]byte, bool) {
	var out []byte
	var found bool
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return nil, false
		}
		b = b[n:]
		if num == want && typ == protowire.BytesType {
			out, n = protowire.ConsumeBytes(b)
			found = n >= 0
		} else {
			n = protowire.ConsumeFieldValue(num, typ, b)
		}
		if n < 0 {
			return nil, false
		}
		b = b[n:]
	}
	return out, found
}

func gzipped(b []byte) ([]byte, error) {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(b); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// shorten cuts s to about n bytes on a rune boundary: a receiver's answer
// may be any text, and a cut inside a rune would log an invalid one.
func shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
