// Package embedtest is a stand-in for an embeddings model in tests and
// benchmarks: an OpenAI-compatible /v1/embeddings server on loopback whose
// vectors are computed, not learned. No model can be downloaded where
// specgate is built and tested, so this is what "semantic search" is
// measured with there, and it must be described as such.
//
// A text's vector is a bag of hashed features over Dims dimensions: each
// word (lower-cased, split on case and separators, with a crude plural
// and -ing/-ed trim) and, at a third of the weight, each of its character
// trigrams. Words of one synonym group (Groups, a short hand-written list
// of words API users use for the same thing) share one feature, so "a
// person who bookmarked a repository" lands near "list stargazers". It
// knows nothing else about language.
package embedtest

import (
	"encoding/json"
	"hash/fnv"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"unicode"
)

// Dims is the length of every vector.
const Dims = 384

// Groups are the synonym groups: each word of a group maps to the group's
// first word. Written once, from what API users call things; not tuned on
// any evaluation set.
var Groups = [][]string{
	{"star", "stargazer", "favorite", "favourite", "bookmark", "like"},
	{"delete", "remove", "erase", "destroy", "trash", "discard", "rid"},
	{"customer", "client", "buyer", "shopper", "purchaser"},
	{"subscription", "membership", "recurring", "plan"},
	{"invoice", "bill", "billing", "receipt"},
	{"refund", "reimburse", "reimbursement", "chargeback"},
	{"message", "sms", "text", "chat"},
	{"call", "dial", "ring", "phone"},
	{"repository", "repo", "codebase", "project"},
	{"issue", "ticket", "bug"},
	{"pod", "container"},
	{"deployment", "rollout", "deploy"},
	{"scale", "replica", "copy", "instance", "resize"},
	{"secret", "credential", "password"},
	{"channel", "room"},
	{"guild", "server", "community"},
	{"member", "user", "person", "people", "teammate", "collaborator", "folk"},
	{"file", "document", "doc", "attachment"},
	{"folder", "directory", "dir"},
	{"invite", "invitation", "collaboration", "share"},
	{"task", "todo", "chore", "assignment"},
	{"comment", "remark", "note", "reply"},
	{"image", "picture", "photo", "drawing"},
	{"transcribe", "transcription", "speech", "audio", "voice"},
	{"webhook", "callback", "hook"},
	{"label", "tag"},
	{"release", "version"},
	{"workflow", "pipeline", "ci"},
	{"payment", "charge", "pay"},
	{"price", "cost", "pricing"},
	{"coupon", "discount", "promo", "promotion"},
	{"role", "permission"},
	{"emoji", "reaction"},
	{"log", "output"},
	{"list", "show", "all", "every", "browse"},
	{"get", "fetch", "retrieve", "read", "look", "detail"},
	{"create", "new", "add", "make"},
	{"update", "change", "edit", "modify", "rename"},
	{"search", "find", "query", "lookup"},
	{"cancel", "stop", "end", "terminate", "halt"},
	{"animal", "pet", "dog", "cat"},
	{"order", "purchase"},
}

var group = func() map[string]string {
	m := map[string]string{}
	for _, g := range Groups {
		for _, w := range g {
			m[w] = g[0]
		}
	}
	return m
}()

var stop = map[string]bool{"a": true, "an": true, "the": true, "of": true, "to": true, "for": true,
	"in": true, "on": true, "my": true, "me": true, "i": true, "is": true, "and": true, "or": true,
	"with": true, "by": true, "from": true, "this": true, "that": true, "it": true, "be": true,
	"who": true, "what": true, "which": true, "at": true, "as": true, "are": true, "our": true}

// Vector is the stand-in's vector of text (not normalised).
func Vector(text string) []float32 {
	v := make([]float32, Dims)
	for _, w := range words(text) {
		w = trim(w)
		if stop[w] || w == "" {
			continue
		}
		if g, ok := group[w]; ok {
			add(v, "g:"+g, 1)
			continue
		}
		add(v, "w:"+w, 1)
		p := "^" + w + "$"
		for i := 0; i+3 <= len(p); i++ {
			add(v, "t:"+p[i:i+3], 0.33)
		}
	}
	return v
}

// add puts weight w on two hashed dimensions of feature f, with hashed
// signs, so unrelated features rarely line up.
func add(v []float32, f string, w float32) {
	h := fnv.New64a()
	h.Write([]byte(f))
	x := h.Sum64()
	for k := 0; k < 2; k++ {
		d := int(x % Dims)
		x /= Dims
		sign := float32(1)
		if x&1 == 1 {
			sign = -1
		}
		x >>= 1
		v[d] += sign * w
	}
}

func words(s string) []string {
	var out []string
	var cur []rune
	var prev rune
	flush := func() {
		if len(cur) > 0 {
			out = append(out, strings.ToLower(string(cur)))
			cur = cur[:0]
		}
	}
	for _, r := range s {
		switch {
		case !unicode.IsLetter(r) && !unicode.IsDigit(r):
			flush()
		case unicode.IsUpper(r) && unicode.IsLower(prev):
			flush()
			cur = append(cur, r)
		default:
			cur = append(cur, r)
		}
		prev = r
	}
	flush()
	return out
}

// trim takes off a plural s and -ing or -ed, crudely.
func trim(w string) string {
	if g, ok := group[w]; ok {
		return g
	}
	for _, suf := range []string{"ing", "ed", "es", "s"} {
		if len(w) > len(suf)+2 && strings.HasSuffix(w, suf) {
			if _, ok := group[w[:len(w)-len(suf)]]; ok {
				return w[:len(w)-len(suf)]
			}
			if suf == "s" && !strings.HasSuffix(w, "ss") {
				return w[:len(w)-1]
			}
		}
	}
	return w
}

// Mode makes the server misbehave.
type Mode int32

const (
	OK          Mode = iota
	Fail             // HTTP 500
	Limited          // HTTP 429 with Retry-After: 1
	WrongDims        // a vector of another length for queries (single inputs)
	FewerVecs        // one vector less than inputs
	NaN              // NaN in every vector
	Hang             // never answers until the request is cancelled
	NotJSON          // a 200 that is not JSON
	Dimensions8      // every vector of 8 dimensions (another model)
)

// Server is a running stand-in.
type Server struct {
	URL string // the /v1/embeddings URL
	// Requests counts requests answered; Inputs counts texts embedded.
	Requests, Inputs atomic.Int64
	// Auth is the last Authorization header seen.
	mu   sync.Mutex
	auth []string
	seen []string

	mode  Mode
	close sync.Once
	ln    net.Listener
	srv   *http.Server
	stop  chan struct{}
}

// Start serves the stand-in on a free loopback port until Close.
func Start() (*Server, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &Server{ln: ln, URL: "http://" + ln.Addr().String() + "/v1/embeddings", stop: make(chan struct{})}
	s.srv = &http.Server{Handler: http.HandlerFunc(s.serve)}
	go s.srv.Serve(ln)
	return s, nil
}

// SetMode changes how the server answers from the next request on.
func (s *Server) SetMode(m Mode) {
	s.mu.Lock()
	s.mode = m
	s.mu.Unlock()
}

// Authorizations returns the Authorization headers received, in order.
func (s *Server) Authorizations() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.auth...)
}

// Texts returns every input text received, in order.
func (s *Server) Texts() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.seen...)
}

// Close stops the server; requests left hanging are released.
func (s *Server) Close() {
	s.close.Do(func() {
		close(s.stop)
		s.srv.Close()
	})
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/v1/embeddings" || r.Method != http.MethodPost {
		http.NotFound(w, r)
		return
	}
	var req struct {
		Model string   `json:"model"`
		Input []string `json:"input"`
	}
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 16<<20)).Decode(&req); err != nil || req.Model == "" {
		http.Error(w, `{"error":"bad request"}`, http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	mode := s.mode
	s.auth = append(s.auth, r.Header.Get("Authorization"))
	s.seen = append(s.seen, req.Input...)
	s.mu.Unlock()
	s.Requests.Add(1)
	switch mode {
	case Fail:
		http.Error(w, `{"error":"model crashed"}`, http.StatusInternalServerError)
		return
	case Limited:
		w.Header().Set("Retry-After", "1")
		http.Error(w, `{"error":"slow down"}`, http.StatusTooManyRequests)
		return
	case Hang:
		select {
		case <-r.Context().Done():
		case <-s.stop:
		}
		return
	case NotJSON:
		w.Write([]byte("<html>gateway</html>"))
		return
	}
	s.Inputs.Add(int64(len(req.Input)))
	type item struct {
		Index     int       `json:"index"`
		Embedding []float32 `json:"embedding"`
	}
	out := struct {
		Data  []item `json:"data"`
		Model string `json:"model"`
	}{Model: req.Model}
	for i, t := range req.Input {
		v := Vector(t)
		switch {
		case mode == WrongDims && len(req.Input) == 1:
			v = v[:Dims/2]
		case mode == Dimensions8:
			v = v[:8]
			v[0] += 1
		}
		out.Data = append(out.Data, item{i, v})
	}
	if mode == FewerVecs && len(out.Data) > 0 {
		out.Data = out.Data[:len(out.Data)-1]
	}
	w.Header().Set("Content-Type", "application/json")
	if mode == NaN {
		// encoding/json refuses NaN; write it as some servers do.
		w.Write([]byte(`{"data":[`))
		for i := range out.Data {
			if i > 0 {
				w.Write([]byte(","))
			}
			w.Write([]byte(`{"index":` + itoa(i) + `,"embedding":[NaN,1]}`))
		}
		w.Write([]byte(`]}`))
		return
	}
	json.NewEncoder(w).Encode(out)
}

func itoa(i int) string {
	b, _ := json.Marshal(i)
	return string(b)
}
