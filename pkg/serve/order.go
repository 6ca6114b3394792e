package serve

import (
	"bytes"
	"context"
	"io"
	"sync"
	"time"
)

// notifyOrderWait bounds how long an answer waits for the progress
// notifications sent before it. Only a client that stops reading makes
// it wait that long, and then the answer cannot be written either.
const notifyOrderWait = 2 * time.Second

// NotifyOrder keeps a call's progress notifications ahead of its answer on
// stdio. mcp-go's stdio transport writes notifications from one goroutine
// and answers from the handler's, so a notification sent just before a
// handler returns could reach the client after the answer, and a client
// drops progress for a request that has ended. Each handler waits, when it
// returns, until every progress notification sent so far has been written.
// The HTTP transport flushes a request's notifications before its answer,
// so there NotifyOrder is off. The zero value is off and ready; safe for
// concurrent use.
type NotifyOrder struct {
	mu      sync.Mutex
	on      bool
	sent    uint64
	written uint64
	changed chan struct{}
}

// start turns the order on; Stdio calls it.
func (o *NotifyOrder) start() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.on = true
	if o.changed == nil {
		o.changed = make(chan struct{})
	}
}

// Queued counts a progress notification handed to the transport.
func (o *NotifyOrder) Queued() {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.on {
		o.sent++
	}
}

// wrote counts a progress notification the transport has written.
func (o *NotifyOrder) wrote() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.written++
	close(o.changed)
	o.changed = make(chan struct{})
}

// Await returns once every progress notification queued before it was
// called has been written, or ctx ends, or notifyOrderWait passes.
func (o *NotifyOrder) Await(ctx context.Context) {
	o.mu.Lock()
	if !o.on || o.written >= o.sent {
		o.mu.Unlock()
		return
	}
	target := o.sent
	o.mu.Unlock()
	timer := time.NewTimer(notifyOrderWait)
	defer timer.Stop()
	for {
		o.mu.Lock()
		if o.written >= target {
			o.mu.Unlock()
			return
		}
		changed := o.changed
		o.mu.Unlock()
		select {
		case <-changed:
		case <-ctx.Done():
			return
		case <-timer.C:
			return
		}
	}
}

// progressLine is how every progress notification mcp-go writes begins: it
// marshals a notification's fields in this order, and a response has an id
// where a notification has its method.
var progressLine = []byte(`{"jsonrpc":"2.0","method":"notifications/progress"`)

// orderedWriter counts the progress notifications written to w. mcp-go
// writes each message with one Write call.
type orderedWriter struct {
	w     io.Writer
	order *NotifyOrder
}

func (w orderedWriter) Write(p []byte) (int, error) {
	n, err := w.w.Write(p)
	if bytes.HasPrefix(p, progressLine) {
		w.order.wrote()
	}
	return n, err
}
