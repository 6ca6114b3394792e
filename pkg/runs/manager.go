package runs

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/specgate/specgate/pkg/codes"
)

// internalAnswer is the error a run's record answers with when the run
// left none it could keep: specgate's failure, not the script's.
func internalAnswer(msg string) json.RawMessage {
	b, _ := json.Marshal(map[string]any{"error": map[string]string{"code": codes.Internal, "message": msg}})
	return b
}

// Defaults of Options' zero fields.
const (
	DefaultHeartbeat = 5 * time.Second
	DefaultLostAfter = 15 * time.Second
	DefaultKeep      = 15 * time.Minute
	// tick is how often a running run looks for a cancel asked on another
	// replica and writes progress that changed.
	tick = time.Second
	// pollEvery is how often a wait on a run that another replica runs
	// reads its record again.
	pollEvery = 500 * time.Millisecond
	// saveTimeout bounds one write of a record.
	saveTimeout = 2 * time.Second
	// stopWait bounds how long Cancel and Drain wait for a stopped run to
	// record how it ended.
	stopWait = 10 * time.Second
)

// Options configure a Manager. The zero value of each field is its default.
type Options struct {
	// Store keeps the records. If nil, a MemoryStore of its own.
	Store Store
	// Replica names this process in the records it writes. If empty, a
	// random name.
	Replica string
	// Heartbeat is how often a running run's record is written even when
	// nothing changed. If zero, DefaultHeartbeat.
	Heartbeat time.Duration
	// LostAfter is how long a running record lives without a heartbeat
	// before it reads as lost. If zero, DefaultLostAfter; at least twice
	// Heartbeat.
	LostAfter time.Duration
	// Keep is how long an ended run's record is kept. If zero, DefaultKeep.
	Keep time.Duration
	// Logger hears records that could not be written. If nil, slog.Default().
	Logger *slog.Logger
}

// Manager starts runs and answers for them. It is safe for concurrent use.
type Manager struct {
	o Options

	wg sync.WaitGroup // one per run in this process

	mu       sync.Mutex
	local    map[memKey]*Run
	draining bool
}

// NewManager returns a Manager.
func NewManager(o Options) *Manager {
	if o.Store == nil {
		o.Store = NewMemoryStore(MemoryStoreOptions{})
	}
	if o.Replica == "" {
		o.Replica = NewID()[len(idPrefix):]
	}
	if o.Heartbeat <= 0 {
		o.Heartbeat = DefaultHeartbeat
	}
	if o.LostAfter <= 0 {
		o.LostAfter = DefaultLostAfter
	}
	o.LostAfter = max(o.LostAfter, 2*o.Heartbeat)
	if o.Keep <= 0 {
		o.Keep = DefaultKeep
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return &Manager{o: o, local: map[memKey]*Run{}}
}

// Outcome is how a run's function ended.
type Outcome struct {
	// Answer is the final answer's JSON text; IsError says it is an error
	// result.
	Answer  json.RawMessage
	IsError bool
	// Progress and Logs are the run's last, kept with the record (a
	// cancelled run answers with them).
	Progress json.RawMessage
	Logs     []string
}

// Causes a run's context is cancelled with.
var (
	// ErrCancelled is the cause of a run stopped by Cancel.
	ErrCancelled = errors.New("the run was cancelled")
	// ErrShutdown is the cause of a run stopped because its process shut
	// down before it ended.
	ErrShutdown = errors.New("specgate shut down before the run ended")
)

// Run is a run in this process.
type Run struct {
	m      *Manager
	cancel context.CancelCauseFunc
	ctx    context.Context
	done   chan struct{}

	mu      sync.Mutex
	rec     Record
	changed bool      // progress or logs changed since the last write
	written time.Time // last write that succeeded
	failing bool      // the last write failed (logged once)
}

// ID is the run's id.
func (r *Run) ID() string { return r.rec.ID }

// Done is closed when the run's function has returned and its end is
// recorded here (the store may still be catching up).
func (r *Run) Done() <-chan struct{} { return r.done }

// Record returns a copy of the run's record as this process knows it.
func (r *Run) Record() Record {
	r.mu.Lock()
	defer r.mu.Unlock()
	c := r.rec
	c.Logs = append([]string(nil), r.rec.Logs...)
	return c
}

// Update records the run's progress and logs; they are written to the store
// within a second.
func (r *Run) Update(progress json.RawMessage, logs []string) {
	if len(progress) > MaxProgressBytes {
		progress = nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if progress != nil {
		r.rec.Progress = progress
	}
	if logs != nil {
		r.rec.Logs = clipLogs(logs)
	}
	r.changed = true
}

// EditProgress replaces the run's progress with edit's answer to it, under
// the run's lock: two parts of the server that each add to the progress
// (the script's own, and a write waiting for approval) do not undo each
// other. edit must not call the run's methods.
func (r *Run) EditProgress(edit func(json.RawMessage) json.RawMessage) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if p := edit(r.rec.Progress); len(p) <= MaxProgressBytes {
		r.rec.Progress = p
		r.changed = true
	}
}

type runKey struct{}

// FromContext returns the run whose function's context ctx is (or derives
// from), if any.
func FromContext(ctx context.Context) (*Run, bool) {
	r, ok := ctx.Value(runKey{}).(*Run)
	return r, ok
}

// Start runs fn on its own goroutine: its context keeps ctx's values but
// not its cancellation or deadline, and is cancelled by Cancel, by Drain,
// or after limit. The record is written at once, so any replica can answer
// for the run from the moment Start returns.
func (m *Manager) Start(ctx context.Context, principal string, limit time.Duration, fn func(ctx context.Context, r *Run) Outcome) (*Run, error) {
	now := time.Now()
	runCtx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	r := &Run{m: m, cancel: cancel, done: make(chan struct{}),
		rec: Record{ID: NewID(), Principal: principal, Status: Running, Started: now, Updated: now, Replica: m.o.Replica}}
	m.mu.Lock()
	if m.draining {
		m.mu.Unlock()
		cancel(ErrShutdown)
		return nil, ErrDraining
	}
	m.local[memKey{principal, r.rec.ID}] = r
	m.wg.Add(1)
	m.mu.Unlock()
	r.ctx = context.WithValue(runCtx, runKey{}, r)
	r.save(ctx, limit)
	go r.run(fn, limit)
	return r, nil
}

func (r *Run) run(fn func(ctx context.Context, r *Run) Outcome, limit time.Duration) {
	m := r.m
	defer m.wg.Done()
	defer r.cancel(nil)
	ended := make(chan Outcome, 1)
	go func() { ended <- fn(r.ctx, r) }()
	// A run is kept for its whole deadline, then for Keep once it ended.
	t := time.NewTicker(tick)
	defer t.Stop()
	// The function's own deadline answers first; this stops one that
	// does not hear it.
	hardStop := time.NewTimer(limit + stopWait)
	defer hardStop.Stop()
	var out Outcome
loop:
	for {
		select {
		case out = <-ended:
			break loop
		case <-hardStop.C:
			r.cancel(context.DeadlineExceeded)
		case <-t.C:
			r.beat(limit)
		}
	}
	r.finish(out)
	// The store may have missed the end (Redis away): keep trying while
	// the record would be kept, so every replica learns how it ended, and
	// answer for it from here meanwhile.
	for i := 0; !r.isWritten() && i < int(m.o.Keep/tick); i++ {
		<-t.C
		r.save(context.Background(), 0)
	}
	m.mu.Lock()
	delete(m.local, memKey{r.rec.Principal, r.rec.ID})
	m.mu.Unlock()
}

// beat writes the record when it changed or a heartbeat is due, and looks
// for a cancel asked on another replica.
func (r *Run) beat(limit time.Duration) {
	m := r.m
	ctx, cancel := context.WithTimeout(context.Background(), saveTimeout)
	defer cancel()
	if yes, err := m.o.Store.CancelRequested(ctx, r.rec.Principal, r.rec.ID); err == nil && yes {
		r.cancel(ErrCancelled)
	}
	r.mu.Lock()
	due := r.changed || r.failing || time.Since(r.written) >= m.o.Heartbeat
	r.mu.Unlock()
	if due {
		r.save(ctx, limit)
	}
}

// finish records how the run ended, and closes Done.
func (r *Run) finish(out Outcome) {
	draining := r.m.isDraining()
	r.mu.Lock()
	cause := context.Cause(r.ctx)
	switch {
	case errors.Is(cause, ErrShutdown), draining && out.IsError:
		// A run that failed while its process shut down failed for that
		// (its calls were refused as the limiter drained): it is lost, to
		// run again, not an error in the script.
		r.rec.Status = Lost
	case errors.Is(cause, ErrCancelled):
		r.rec.Status = Cancelled
	case len(out.Answer) == 0:
		r.rec.Status, r.rec.IsError = Failed, true
		r.rec.Answer = internalAnswer("the run ended with no answer")
	case out.IsError:
		r.rec.Status, r.rec.Answer, r.rec.IsError = Failed, out.Answer, true
	default:
		r.rec.Status, r.rec.Answer = Done, out.Answer
	}
	if len(r.rec.Answer) > MaxAnswerBytes {
		r.rec.Status, r.rec.IsError = Failed, true
		r.rec.Answer = internalAnswer("the run's answer was too large to keep")
	}
	if out.Progress != nil && len(out.Progress) <= MaxProgressBytes {
		r.rec.Progress = out.Progress
	}
	if out.Logs != nil {
		r.rec.Logs = clipLogs(out.Logs)
	}
	r.rec.Ended = time.Now()
	r.written = time.Time{}
	r.mu.Unlock()
	r.save(context.Background(), 0)
	close(r.done)
}

func (r *Run) isWritten() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return !r.written.IsZero()
}

// save writes the record; limit is what is left of the run's deadline while
// it runs (the record must outlive it).
func (r *Run) save(ctx context.Context, limit time.Duration) {
	m := r.m
	r.mu.Lock()
	r.rec.Updated = time.Now()
	rec := r.rec
	r.changed = false
	r.mu.Unlock()
	blob, err := Encode(&rec)
	if err != nil {
		m.o.Logger.Error("run record not written", "run", rec.ID, "err", err)
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), saveTimeout)
	defer cancel()
	err = m.o.Store.Save(ctx, &rec, blob, m.o.LostAfter, limit+m.o.Keep)
	r.mu.Lock()
	defer r.mu.Unlock()
	if err != nil {
		if !r.failing {
			m.o.Logger.Warn("run record not written; retrying each second", "run", rec.ID, "err", err)
		}
		r.failing, r.changed = true, true
		return
	}
	if r.failing {
		m.o.Logger.Info("run record written again", "run", rec.ID)
	}
	r.failing, r.written = false, time.Now()
}

func (m *Manager) isDraining() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.draining
}

// lookup returns principal's run id in this process.
func (m *Manager) lookup(principal, id string) *Run {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.local[memKey{principal, id}]
}

// Get returns principal's run id as it stands: from this process when it
// runs here, else from the store, a running record that is not alive read
// as Lost.
func (m *Manager) Get(ctx context.Context, principal, id string) (*Record, error) {
	if r := m.lookup(principal, id); r != nil {
		rec := r.Record()
		return &rec, nil
	}
	blob, alive, err := m.o.Store.Load(ctx, principal, id)
	if err != nil {
		return nil, err
	}
	rec, err := Decode(blob, principal, id)
	if err != nil {
		return nil, err
	}
	if rec.Status == Running && !alive {
		rec.Status = Lost
	}
	return rec, nil
}

// Wait returns principal's run id as soon as it has ended, or as it stands
// after d (or when ctx ends).
func (m *Manager) Wait(ctx context.Context, principal, id string, d time.Duration) (*Record, error) {
	timer := time.NewTimer(d)
	defer timer.Stop()
	if r := m.lookup(principal, id); r != nil {
		select {
		case <-r.done:
		case <-timer.C:
		case <-ctx.Done():
		}
		rec := r.Record()
		return &rec, nil
	}
	poll := time.NewTicker(pollEvery)
	defer poll.Stop()
	for {
		rec, err := m.Get(ctx, principal, id)
		if err != nil || rec.Status.Ended() {
			return rec, err
		}
		select {
		case <-poll.C:
		case <-timer.C:
			return m.Get(ctx, principal, id)
		case <-ctx.Done():
			return rec, nil
		}
	}
}

// Cancel stops principal's run id and returns its record once it recorded
// how it ended (or as it stands after a bound, if its replica is slow to
// hear). A run that already ended is returned as it ended.
func (m *Manager) Cancel(ctx context.Context, principal, id string) (*Record, error) {
	if r := m.lookup(principal, id); r != nil {
		r.cancel(ErrCancelled)
		return m.Wait(ctx, principal, id, stopWait)
	}
	rec, err := m.Get(ctx, principal, id)
	if err != nil || rec.Status.Ended() {
		return rec, err
	}
	if err := m.o.Store.RequestCancel(ctx, principal, id, m.o.Keep); err != nil {
		return nil, err
	}
	return m.Wait(ctx, principal, id, stopWait)
}

// Keep is how long an ended run's record is kept.
func (m *Manager) Keep() time.Duration { return m.o.Keep }

// Running returns principal's runs in this process.
func (m *Manager) Running(principal string) []Record {
	m.mu.Lock()
	var rs []*Run
	for k, r := range m.local {
		if k.principal == principal {
			rs = append(rs, r)
		}
	}
	m.mu.Unlock()
	out := make([]Record, 0, len(rs))
	for _, r := range rs {
		out = append(out, r.Record())
	}
	return out
}

// List returns principal's runs, newest started first, at most limit (and
// at most MaxListed): those in this process as they stand, and those the
// store keeps, which other replicas run or ran; a running record that is
// not alive reads as Lost. When the store cannot be read, List returns the
// runs in this process and the error.
func (m *Manager) List(ctx context.Context, principal string, limit int) ([]Record, error) {
	limit = min(max(limit, 0), MaxListed)
	out := m.Running(principal)
	seen := make(map[string]bool, len(out))
	for _, rec := range out {
		seen[rec.ID] = true
	}
	stored, err := m.o.Store.List(ctx, principal, limit)
	for _, st := range stored {
		if seen[st.ID] || !ValidID(st.ID) {
			continue
		}
		rec, derr := Decode(st.Blob, principal, st.ID)
		if derr != nil {
			if !errors.Is(derr, ErrNotFound) {
				m.o.Logger.Warn("run record not listed", "run", st.ID, "err", derr)
			}
			continue
		}
		if rec.Status == Running && !st.Alive {
			rec.Status = Lost
		}
		seen[rec.ID] = true
		out = append(out, *rec)
	}
	slices.SortFunc(out, func(a, b Record) int {
		if c := b.Started.Compare(a.Started); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return out[:min(len(out), limit)], err
}

// All returns every run in this process, whoever started it, for the
// operator's view; a run's Principal says whose it is.
func (m *Manager) All() []Record {
	m.mu.Lock()
	rs := make([]*Run, 0, len(m.local))
	for _, r := range m.local {
		rs = append(rs, r)
	}
	m.mu.Unlock()
	out := make([]Record, 0, len(rs))
	for _, r := range rs {
		out = append(out, r.Record())
	}
	return out
}

// Drain takes no new runs, waits for the runs in this process to end until
// ctx ends, then stops the rest and records them as lost, so no client
// waits on a run that nobody runs.
func (m *Manager) Drain(ctx context.Context) {
	m.mu.Lock()
	m.draining = true
	m.mu.Unlock()
	all := make(chan struct{})
	go func() { m.wg.Wait(); close(all) }()
	select {
	case <-all:
		return
	case <-ctx.Done():
	}
	m.mu.Lock()
	for _, r := range m.local {
		r.cancel(ErrShutdown)
	}
	m.mu.Unlock()
	t := time.NewTimer(stopWait)
	defer t.Stop()
	select {
	case <-all:
	case <-t.C:
	}
}
