package spec

import (
	"encoding/json"
	"fmt"
	"net/url"
	"runtime"
	"sync"
	"sync/atomic"
)

// pathContext is what every path item's operations are read with.
type pathContext struct {
	docSecurity []map[string][]string
	specURL     *url.URL
	opts        Options
	tags        map[string]string
}

// pathRead is what reading one path item gave: why it was skipped, or its
// operations in method order.
type pathRead struct {
	skip string
	ops  []opRead
}

// opRead is one operation's endpoint (nil when it was skipped) and the
// warning reading it gave.
type opRead struct {
	e    *Endpoint
	warn string
}

// describeMemo keeps what a referenced schema says (see byRef), for the
// operations one goroutine reads.
type describeMemo struct{ about, fields map[string]string }

// readPaths builds the endpoints of every path item, in document order:
// path-level $refs followed, operations too deep for validation left out
// (Unusable), and a repeated operationId given a numeric suffix.
//
// Each path item is read on its own, on every core (a large spec's
// operations are most of its load); what depends on the items before it
// (warnings in order, depth, ids) is settled after, in document order, so
// the catalog is the one a single goroutine reads.
func (s *Spec) readPaths(paths []entry, pc pathContext, depth *depthChecker) {
	read := make([]pathRead, len(paths))
	workers := runtime.GOMAXPROCS(0)
	memos := make([]describeMemo, workers)
	for w := range memos {
		memos[w] = describeMemo{about: map[string]string{}, fields: map[string]string{}}
	}
	eachParallel(len(paths), workers, func(i, w int) {
		read[i] = s.readPath(paths[i], pc, memos[w])
	})
	seen := map[string]int{}
	for i, r := range read {
		path := paths[i].Key
		if r.skip != "" {
			s.Warnings = append(s.Warnings, r.skip)
			continue
		}
		for _, op := range r.ops {
			if op.warn != "" {
				s.Warnings = append(s.Warnings, op.warn)
			}
			e := op.e
			if e == nil {
				continue
			}
			if why := depth.problem(e.raw); why != "" {
				s.Warnings = append(s.Warnings, fmt.Sprintf("%s %s: %s: left out", e.Method, path, why))
				if s.Unusable == nil {
					s.Unusable = map[string]string{}
				}
				s.Unusable[e.ID] = why
				if s.deep == "" {
					s.deep = e.Method + " " + path
				}
				continue
			}
			if n := seen[e.ID]; n > 0 {
				// A repeated operationId keeps its first id; later ones get a
				// numeric suffix in document order, so ids stay stable.
				base := e.ID
				for seen[e.ID] > 0 {
					n++
					e.ID = fmt.Sprintf("%s_%d", base, n)
				}
				seen[base] = n
			}
			seen[e.ID]++
			s.Endpoints = append(s.Endpoints, e)
		}
	}
}

// readPath reads one path item's operations, each with what its success
// answer is (once at load, and then from the catalog cache: many
// operations answer with the same schema). It writes nothing of s.
func (s *Spec) readPath(p entry, pc pathContext, memo describeMemo) pathRead {
	item, ok := rawObject(p.Value)
	if !ok {
		return pathRead{skip: fmt.Sprintf("path %s is not an object: skipped", p.Key)}
	}
	if ref, ok := field[string](item, "$ref"); ok {
		target, ok := s.resolve(ref, "pathItems")
		if !ok || json.Unmarshal(target, &item) != nil {
			return pathRead{skip: fmt.Sprintf("path %s: $ref %s not found: skipped", p.Key, ref)}
		}
	}
	itemParams, _ := field[[]json.RawMessage](item, "parameters")
	itemServers, _ := field[[]rawServer](item, "servers")
	var out pathRead
	for _, m := range methodOrder {
		opRaw, ok := item[m]
		if !ok {
			continue
		}
		e, warn := s.buildEndpoint(p.Key, m, opRaw, itemParams, itemServers, pc.docSecurity, pc.specURL, pc.opts)
		if e != nil {
			success := e.successSchema()
			e.About = e.responseAbout(success, memo.about)
			e.Glossary = e.glossary(success, memo.fields, pc.tags)
		}
		out.ops = append(out.ops, opRead{e: e, warn: warn})
	}
	return out
}

// eachParallel calls f(i, w) for every i in [0, n) on up to workers
// goroutines, w being the goroutine's number (for state of its own). A
// panic in f is raised again in the caller's goroutine: the one of the
// lowest i, which a loop in order would have met first (every lower i was
// handed out before it, and is finished).
func eachParallel(n, workers int, f func(i, w int)) {
	workers = min(workers, n)
	if workers <= 1 {
		for i := range n {
			f(i, 0)
		}
		return
	}
	var (
		next     atomic.Int64
		wg       sync.WaitGroup
		mu       sync.Mutex
		panicAt  = n
		panicked any
	)
	for w := range workers {
		wg.Go(func() {
			i := 0
			defer func() {
				if r := recover(); r != nil {
					mu.Lock()
					if i < panicAt {
						panicAt, panicked = i, r
					}
					mu.Unlock()
					next.Store(int64(n))
				}
			}()
			for {
				if i = int(next.Add(1)) - 1; i >= n {
					return
				}
				f(i, w)
			}
		})
	}
	wg.Wait()
	if panicAt < n {
		panic(panicked)
	}
}
