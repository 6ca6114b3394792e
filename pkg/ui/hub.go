package ui

import (
	"context"
	"encoding/json"
	"sync"
	"time"
)

// Defaults of HubOptions' zero fields.
const (
	// DefaultSamples is 10 minutes of one-second samples.
	DefaultSamples = 600
	// maxUpstreams bounds the upstreams charted: limiter keys come from
	// the config and the specs' hosts, but a bound costs nothing.
	maxUpstreams = 256
)

// HubOptions configure a Hub. The zero value of each field is its default.
type HubOptions struct {
	// Audit is the audit tail shown. If nil, none.
	Audit *AuditTail
	// Approvals are the writes waiting for a person. If nil, none.
	Approvals *Approvals
	// Samples is how many one-second samples each upstream keeps. If zero,
	// DefaultSamples.
	Samples int
	// MaxStreams bounds the event streams open at once. If zero,
	// DefaultMaxStreams.
	MaxStreams int
	// Now is the clock. If nil, time.Now.
	Now func() time.Time
}

// Hub asks the Source once a tick and keeps the answer, encoded once, for
// every viewer, with each upstream's samples of the last ten minutes: a
// poll of /ui/api/state reads it, and each event stream is handed the same
// frame, so a hundred viewers cost one computation a tick. It is safe for
// concurrent use.
type Hub struct {
	src  Source
	o    HubOptions
	mu   sync.Mutex
	last map[string]Upstream // the previous tick's, for the change per second
	ring map[string]*ring
	seen map[string]int64 // last tick an upstream was in the state
	enc  []byte           // the state as every viewer reads it

	frame   []byte // enc as a server-sent event
	subs    map[*Subscription]struct{}
	stopped bool  // Run ended: no more streams
	dropped int64 // streams dropped for falling behind
}

type ring struct {
	s    []Sample
	next int
	full bool
}

func (r *ring) add(s Sample) {
	if !r.full && len(r.s) < cap(r.s) {
		r.s = append(r.s, s)
		return
	}
	r.full = true
	r.s[r.next] = s
	r.next = (r.next + 1) % len(r.s)
}

func (r *ring) all() []Sample {
	if !r.full {
		return append([]Sample(nil), r.s...)
	}
	return append(append([]Sample(nil), r.s[r.next:]...), r.s[:r.next]...)
}

// NewHub returns a Hub over src; call Run to tick, or Tick to tick once.
func NewHub(src Source, o HubOptions) *Hub {
	if o.Samples <= 0 {
		o.Samples = DefaultSamples
	}
	if o.MaxStreams <= 0 {
		o.MaxStreams = DefaultMaxStreams
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Hub{src: src, o: o, last: map[string]Upstream{}, ring: map[string]*ring{}, seen: map[string]int64{},
		subs: map[*Subscription]struct{}{}}
}

// Run ticks at once and then every second until ctx ends, then ends every
// event stream (so a server's shutdown does not wait on them) and opens no
// more.
func (h *Hub) Run(ctx context.Context) {
	defer h.stop()
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		h.Tick(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// statePage is the JSON of /ui/api/state.
type statePage struct {
	At         string              `json:"at"`
	Upstreams  []Upstream          `json:"upstreams"`
	Samples    map[string][]Sample `json:"samples"`
	Runs       []Run               `json:"runs"`
	Principals []Principal         `json:"principals"`
	Audit      []json.RawMessage   `json:"audit"`
	Approvals  []Approval          `json:"approvals"`
	// Pending counts every approval waiting; Approvals lists the oldest.
	Pending int `json:"pendingApprovals"`
}

// Tick asks the Source for the state, samples each upstream and encodes
// what viewers read until the next tick.
func (h *Hub) Tick(ctx context.Context) {
	now := h.o.Now()
	st := h.src.State(ctx, now)
	h.mu.Lock()
	defer h.mu.Unlock()
	sec := now.Unix()
	for _, u := range st.Upstreams {
		r := h.ring[u.Key]
		if r == nil {
			if len(h.ring) >= maxUpstreams {
				continue
			}
			r = &ring{s: make([]Sample, 0, h.o.Samples)}
			h.ring[u.Key] = r
		}
		s := Sample{At: sec, Queue: u.QueueDepth, Used: u.Used, Limit: u.Limit}
		if prev, ok := h.last[u.Key]; ok {
			s.Admitted = max(u.Admitted-prev.Admitted, 0)
			s.Got429 = max(u.Upstream429s-prev.Upstream429s, 0)
		}
		r.add(s)
		h.last[u.Key] = u
		h.seen[u.Key] = sec
	}
	// An upstream gone from the state for as long as its chart spans is
	// dropped with its samples.
	for k, at := range h.seen {
		if sec-at > int64(h.o.Samples) {
			delete(h.seen, k)
			delete(h.ring, k)
			delete(h.last, k)
		}
	}
	p := statePage{At: now.UTC().Format(time.RFC3339), Upstreams: st.Upstreams, Runs: st.Runs, Samples: map[string][]Sample{}}
	if p.Upstreams == nil {
		p.Upstreams = []Upstream{}
	}
	if p.Runs == nil {
		p.Runs = []Run{}
	}
	p.Principals = st.Principals
	if p.Principals == nil {
		p.Principals = []Principal{}
	}
	for k, r := range h.ring {
		p.Samples[k] = r.all()
	}
	p.Audit = h.o.Audit.Lines()
	p.Approvals, p.Pending = h.o.Approvals.Pending()
	enc, err := json.Marshal(p)
	if err != nil {
		return
	}
	h.enc = enc
	h.publish(frameOf(enc))
}

// JSON returns the state as of the last tick; before the first, an empty
// state.
func (h *Hub) JSON() []byte {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.enc == nil {
		return []byte(`{"upstreams":[],"samples":{},"runs":[],"principals":[],"audit":[],"approvals":[],"pendingApprovals":0}`)
	}
	return h.enc
}
