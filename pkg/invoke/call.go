package invoke

import (
	"context"
	"net/http"
	"time"

	"github.com/specgate/specgate/pkg/answer"
	"github.com/specgate/specgate/pkg/spec"
)

// Caller is the whole call behind the invoke tool: the governed call and
// its pages, then the answer store and the result cache around it. A
// Caller is safe for concurrent use once its fields are set; it is cheap
// to build per call as long as Cache outlives it.
type Caller struct {
	// Governed runs the call; its Client is required and its Now is the
	// clock of the cache and of stored answers.
	Governed
	// Answers keeps each answer for read_response. If nil, answers are not
	// stored and nothing is cached.
	Answers answer.AnswerStore
	// Cache holds the last successful result of identical idempotent calls.
	// If nil, nothing is cached.
	Cache *answer.ResultCache
	// CacheTTL gives, per idempotent endpoint, how long an identical call is
	// answered from the cache. If nil, never.
	CacheTTL func(*spec.Endpoint) time.Duration
	// Validators keeps, for a GET whose answer came with an ETag or a
	// Last-Modified, the stored answer and its validators: the same call by
	// the same principal again sends If-None-Match or If-Modified-Since, and
	// a 304 is answered with the stored answer, Revalidated. If nil, no call
	// is conditional.
	Validators *answer.ResultCache
	// ValidatorTTL is how long validators are kept: the answer store's TTL.
	// Zero: a day.
	ValidatorTTL time.Duration
}

// CallResult is one call's answer, fresh or cached.
type CallResult struct {
	// Answer is the answer as the store keeps it; for a cache hit, as read
	// back from the store. Nil when the call failed.
	Answer *answer.Answer
	// ResponseID names the stored answer; "" when it was not stored.
	ResponseID string
	// Size is the answer's size in bytes: the body the upstream sent for
	// one page, the joined body for several.
	Size int64
	// Cached is true when the answer is an earlier call's, served from the
	// cache at no rate-limit cost; Age is how old it is.
	Cached bool
	Age    time.Duration
	// Paged is the governed call, with its trace, pages, next page and
	// why the pages stopped; nil for a cache hit.
	Paged *Paged
	// Latency is how long the governed call took, on Now's clock.
	Latency time.Duration
	// StoreErr is why the answer could not be stored, when it could not.
	StoreErr error
	// Revalidated is true when the upstream answered 304 Not Modified to a
	// conditional request: Answer is the stored answer it confirmed.
	Revalidated bool
}

// Call answers one call for ctx's principal (PrincipalKey): from the cache
// when an identical idempotent call succeeded within the endpoint's TTL and
// its stored answer is still there, else by a governed call (following up
// to opt.Pages pages) whose answer is stored and, when 2xx and not
// truncated, cached. The result is never nil; on error it holds the
// governed call's trace.
func (c *Caller) Call(ctx context.Context, e *spec.Endpoint, in Args, opt CallOptions) (*CallResult, error) {
	principal, pages := PrincipalKey(ctx), opt.pages()
	ttl := time.Duration(0)
	if c.CacheTTL != nil && c.Cache != nil && c.Answers != nil && e.Idempotent() {
		ttl = c.CacheTTL(e)
	}
	var key string
	if ttl > 0 {
		key = cacheKey(principal, c.Client.CredentialFingerprint(ctx, e), e.ID, in, pages)
		if hit, age, ok := c.Cache.Get(key, ttl, c.now()); ok {
			if ans, err := c.Answers.Get(ctx, principal, hit.ResponseID); err == nil {
				return &CallResult{Answer: ans, ResponseID: hit.ResponseID, Size: hit.Size, Cached: true, Age: age}, nil
			}
		}
	}
	var vkey string
	var valid answer.Cached
	var stored *answer.Answer
	conditional := c.Validators != nil && c.Answers != nil && e.Method == "GET" && pages <= 1
	if conditional {
		vkey = cacheKey(principal, c.Client.CredentialFingerprint(ctx, e), e.ID, in, pages)
		// conditional only while the answer a 304 would confirm is still stored
		if v, _, ok := c.Validators.Get(vkey, c.validatorTTL(), c.now()); ok {
			if ans, gerr := c.Answers.Get(ctx, principal, v.ResponseID); gerr == nil {
				valid, stored = v, ans
				ctx = context.WithValue(ctx, conditionalKey{}, v)
			}
		}
	}
	started := c.now()
	paged, err := c.DoPages(ctx, e, in, opt)
	r := &CallResult{Paged: paged, Latency: c.now().Sub(started)}
	if err != nil {
		return r, err
	}
	res := paged.Result
	if res.StatusCode == http.StatusNotModified && stored != nil {
		r.Answer, r.ResponseID, r.Size, r.Revalidated = stored, valid.ResponseID, valid.Size, true
		if ttl > 0 {
			c.Cache.Put(key, answer.Cached{ResponseID: valid.ResponseID, Size: valid.Size}, c.now())
		}
		return r, nil
	}
	r.Answer = paged.Answer(e, c.now())
	r.Size = int64(len(r.Answer.Body))
	if len(paged.Results) == 1 {
		r.Size = res.Size
	}
	// An answer with a next page is stored even without a body: its id
	// stands for next-page parameters too large to show (NextPageFor).
	if (len(r.Answer.Body) > 0 || r.Answer.NextPage != nil) && c.Answers != nil {
		r.ResponseID, r.StoreErr = c.Answers.Put(ctx, principal, r.Answer)
		if r.StoreErr != nil {
			r.ResponseID = ""
		}
	}
	if ttl > 0 && r.ResponseID != "" && res.StatusCode >= 200 && res.StatusCode < 300 && !res.Truncated {
		c.Cache.Put(key, answer.Cached{ResponseID: r.ResponseID, Size: r.Size}, c.now())
	}
	if conditional && r.ResponseID != "" && res.StatusCode == http.StatusOK && !res.Truncated {
		etag, lm := res.RawHeaders.Get("ETag"), res.RawHeaders.Get("Last-Modified")
		if len(etag) > maxValidator || len(lm) > maxValidator {
			etag, lm = "", ""
		}
		if etag != "" || lm != "" {
			c.Validators.Put(vkey, answer.Cached{ResponseID: r.ResponseID, Size: r.Size, ETag: etag, LastModified: lm}, c.now())
		}
	}
	return r, nil
}

// maxValidator bounds an ETag or Last-Modified kept for a conditional request.
const maxValidator = 256

// conditionalKey carries the validators of a conditional request to the
// governed call, which sets them on the request it prepared.
type conditionalKey struct{}

// setConditional adds If-None-Match and If-Modified-Since to call when ctx
// carries validators, unless the arguments set those headers themselves.
func setConditional(ctx context.Context, call *Call) {
	v, ok := ctx.Value(conditionalKey{}).(answer.Cached)
	if !ok {
		return
	}
	if v.ETag != "" && call.header.Get("If-None-Match") == "" {
		call.header.Set("If-None-Match", v.ETag)
	}
	if v.LastModified != "" && call.header.Get("If-Modified-Since") == "" {
		call.header.Set("If-Modified-Since", v.LastModified)
	}
}

func (c *Caller) validatorTTL() time.Duration {
	if c.ValidatorTTL > 0 {
		return c.ValidatorTTL
	}
	return 24 * time.Hour
}

// NextPageArgs returns in set to ask for the next page of the answer id of
// ctx's principal names, for invoke's nextPageOf: the stored next-page parameters
// are used as they are (the cursor among them), and in's parameters add only
// the names they lack, so a model that repeats its last call's parameters
// beside nextPageOf still moves on. Its errors are *AnswerNotFoundError
// (unknown, expired or evicted, another principal's, or no store) and
// *ArgError (an answer of another endpoint than e, or one without a next
// page).
func (c *Caller) NextPageArgs(ctx context.Context, e *spec.Endpoint, id string, in Args) (Args, error) {
	if c.Answers == nil {
		return in, answer.NotFound(id, answer.AnswerUnknown)
	}
	a, err := c.Answers.Get(ctx, PrincipalKey(ctx), id)
	if err != nil {
		return in, err
	}
	if a.Endpoint != e.ID {
		return in, &ArgError{Endpoint: e.ID, Problems: []string{"nextPageOf names an answer of " + clip(a.Endpoint) + ", not of " + e.ID + ": call that endpoint with it"}}
	}
	if a.NextPage == nil {
		return in, &ArgError{Endpoint: e.ID, Problems: []string{"the answer nextPageOf names has no next page"}}
	}
	params := make(map[string]any, len(a.NextPage)+len(in.Parameters))
	for k, v := range in.Parameters {
		params[k] = v
	}
	for k, v := range a.NextPage {
		params[k] = v
	}
	in.Parameters = params
	return in, nil
}

// ReadBytes is how much the upstream sent for the call, all pages; zero
// for a cache hit.
func (r *CallResult) ReadBytes() int64 {
	if r.Paged == nil {
		return 0
	}
	var n int64
	for _, p := range r.Paged.Results {
		n += p.Size
	}
	return n
}
