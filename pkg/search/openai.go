package search

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
)

// HTTPEmbedder calls an OpenAI-compatible embeddings endpoint (OpenAI,
// Ollama, llama.cpp, vLLM, TEI): a POST of {"model", "input": [...]}
// answered with {"data": [{"index", "embedding"}]}. Only the texts it is
// given go out: endpoint texts and search queries.
//
// The endpoint is an upstream like any other: when it answers 429 it is
// not asked again before its Retry-After (10s when it gives none, 1h at
// most) has passed, and Embed fails at once meanwhile.
type HTTPEmbedder struct {
	// URL is the endpoint, e.g. http://127.0.0.1:11434/v1/embeddings.
	URL string
	// Model is sent with every request.
	Model string
	// APIKey, when set, is sent as a bearer token and never in a message.
	APIKey string
	// Client sends the requests; if nil, one that follows no redirect is
	// used.
	Client *http.Client
	// MaxBytes bounds an answer. If 0, 64 MiB.
	MaxBytes int64
	// Now is the clock of Retry-After waits. If nil, time.Now.
	Now func() time.Time
	// Gate, when set, admits each request before it is sent, and done
	// hears its answer (the status and headers; status 0 when none came).
	// serve gates requests through the rate limiter, so an upstream budget
	// written for the endpoint's host holds and its 429s are learned as for
	// any upstream. A refusal should be a *RateLimitedError.
	Gate func(ctx context.Context) (done func(status int, h http.Header), err error)

	mu           sync.Mutex
	blockedUntil time.Time
}

// RateLimitedError is an embeddings endpoint's refusal: ask again after
// Wait.
type RateLimitedError struct {
	Wait time.Duration
}

func (e *RateLimitedError) Error() string {
	return fmt.Sprintf("the embeddings endpoint is rate limited: retry in %s", e.Wait.Round(time.Millisecond))
}

var noRedirects = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

// Embed returns one vector per text, in order.
func (h *HTTPEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	now := time.Now
	if h.Now != nil {
		now = h.Now
	}
	h.mu.Lock()
	wait := h.blockedUntil.Sub(now())
	h.mu.Unlock()
	if wait > 0 {
		return nil, &RateLimitedError{Wait: wait}
	}
	body, err := json.Marshal(struct {
		Model string   `json:"model"`
		Input []string `json:"input"`
	}{h.Model, texts})
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, h.URL, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("embeddings url: %w", scrubURLError(err))
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	if h.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+h.APIKey)
	}
	client := h.Client
	if client == nil {
		client = noRedirects
	}
	done := func(int, http.Header) {}
	if h.Gate != nil {
		if done, err = h.Gate(ctx); err != nil {
			return nil, err
		}
	}
	resp, err := client.Do(req)
	if err != nil {
		done(0, nil)
		return nil, fmt.Errorf("embeddings request: %w", scrubURLError(err))
	}
	defer done(resp.StatusCode, resp.Header)
	return h.read(resp, len(texts), now)
}

// read checks and decodes an embeddings answer.
func (h *HTTPEmbedder) read(resp *http.Response, n int, now func() time.Time) ([][]float32, error) {
	defer resp.Body.Close()
	limit := h.MaxBytes
	if limit <= 0 {
		limit = 64 << 20
	}
	if resp.StatusCode == http.StatusTooManyRequests {
		d := retryAfter(resp.Header.Get("Retry-After"), now())
		h.mu.Lock()
		h.blockedUntil = now().Add(d)
		h.mu.Unlock()
		io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		return nil, &RateLimitedError{Wait: d}
	}
	if resp.StatusCode/100 != 2 {
		// The body is not quoted: an endpoint may echo what it was sent.
		io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		return nil, fmt.Errorf("the embeddings endpoint answered HTTP %d", resp.StatusCode)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return nil, fmt.Errorf("reading the embeddings answer: %w", err)
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("the embeddings answer is over %d bytes", limit)
	}
	var out struct {
		Data []struct {
			Index     *int      `json:"index"`
			Embedding []float32 `json:"embedding"`
		} `json:"data"`
	}
	if err := json.Unmarshal(data, &out); err != nil {
		return nil, errors.New("the embeddings answer is not the expected JSON ({\"data\": [{\"index\", \"embedding\"}]})")
	}
	if len(out.Data) != n {
		return nil, fmt.Errorf("the embeddings endpoint gave %d vectors for %d inputs", len(out.Data), n)
	}
	vs := make([][]float32, n)
	for i, d := range out.Data {
		at := i
		if d.Index != nil {
			at = *d.Index
		}
		if at < 0 || at >= len(vs) || vs[at] != nil {
			return nil, errors.New("the embeddings answer has a missing or repeated index")
		}
		if len(d.Embedding) == 0 {
			return nil, errors.New("the embeddings answer has an empty vector")
		}
		vs[at] = d.Embedding
	}
	return vs, nil
}

// retryAfter reads a Retry-After header (seconds or an HTTP date): 10s when
// absent or unreadable, at least 1s, at most an hour.
func retryAfter(v string, now time.Time) time.Duration {
	d := 10 * time.Second
	v = strings.TrimSpace(v)
	if n, err := strconv.ParseFloat(v, 64); err == nil && n >= 0 && n < 1e9 {
		d = time.Duration(n * float64(time.Second))
	} else if t, err := http.ParseTime(v); err == nil {
		d = t.Sub(now)
	}
	return min(max(d, time.Second), time.Hour)
}

// scrubURLError drops the URL from a transport error: it may carry a
// password.
func scrubURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}
