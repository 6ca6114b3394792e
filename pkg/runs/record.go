// Package runs keeps the record of work that outlives the call that started
// it: a run_script run that answers with a run id after
// scripts.answer_within and goes on in the background. A Manager starts each
// run on its own goroutine, detached from the call, and keeps its Record
// (status, progress, logs, final answer) in a Store that every replica can
// read: memory for one process, Redis for several. The replica running a run
// refreshes the record every Heartbeat; a record still marked running that
// was not refreshed for LostAfter is a lost run (its replica died), answered
// as such with what it last recorded. A cancel asked on any replica reaches
// the replica running the run within a second.
//
// A record read back from the store is data: it is decoded strictly, checked
// against the principal and id asked for, and bounded in size, so a record
// edited by hand can make a run look ended or lost, never run anything.
package runs

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Status is where a run stands.
type Status string

// The statuses of a run. Running is the only one that changes.
const (
	Running   Status = "running"
	Done      Status = "done"      // ended; Answer is the final answer
	Failed    Status = "failed"    // ended in an error; Answer is the error result
	Cancelled Status = "cancelled" // stopped by its principal
	Lost      Status = "lost"      // its replica stopped refreshing it, or shut down first
)

func (s Status) valid() bool {
	switch s {
	case Running, Done, Failed, Cancelled, Lost:
		return true
	}
	return false
}

// Ended reports whether the run will not change any more.
func (s Status) Ended() bool { return s != Running }

// Bounds of what a record holds.
const (
	// MaxProgressBytes bounds a record's progress (the caller's JSON).
	MaxProgressBytes = 4 << 10
	// MaxAnswerBytes bounds a record's final answer: an answer that fits
	// the model's largest budget, with room for its envelope.
	MaxAnswerBytes = 64 << 10
	// MaxLogBytes bounds the logs a record keeps.
	MaxLogBytes = 8 << 10
	// maxRecordBytes bounds a record's encoded form, read or written.
	maxRecordBytes = MaxProgressBytes + MaxAnswerBytes + 2*MaxLogBytes + 4<<10
	idPrefix       = "run-"
)

// Record is what the store keeps of a run.
type Record struct {
	ID        string `json:"id"`
	Principal string `json:"principal"`
	Status    Status `json:"status"`
	// Progress is the caller's JSON of the run's progress (calls so far,
	// what the script reported); null until there is some.
	Progress json.RawMessage `json:"progress,omitempty"`
	// Logs are the run's console lines, as last recorded.
	Logs []string `json:"logs,omitempty"`
	// Answer is the final answer's JSON text once the run ended as Done
	// or Failed; IsError says it is an error result.
	Answer  json.RawMessage `json:"answer,omitempty"`
	IsError bool            `json:"isError,omitempty"`
	Started time.Time       `json:"started"`
	Updated time.Time       `json:"updated"`
	Ended   time.Time       `json:"ended,omitzero"`
	// Replica names the process running it.
	Replica string `json:"replica,omitempty"`
}

// ErrNotFound is a run that does not exist for the principal asking: never
// started, expired, or another principal's.
var ErrNotFound = errors.New("no such run")

// ErrDraining refuses a new run while the process shuts down.
var ErrDraining = errors.New("this specgate is shutting down and takes no new runs")

// NewID returns a new run id: "run-" and 24 hex digits.
func NewID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return idPrefix + hex.EncodeToString(b[:])
}

// ValidID reports whether s has the form of a run id. Ids from an older
// specgate (12 hex digits) are valid too.
func ValidID(s string) bool {
	if len(s) < len(idPrefix)+12 || len(s) > len(idPrefix)+32 || s[:len(idPrefix)] != idPrefix {
		return false
	}
	for _, c := range s[len(idPrefix):] {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// Encode is the stored form of r.
func Encode(r *Record) ([]byte, error) {
	b, err := json.Marshal(r)
	if err != nil {
		return nil, err
	}
	if len(b) > maxRecordBytes {
		return nil, fmt.Errorf("run record is %d bytes, over %d", len(b), maxRecordBytes)
	}
	return b, nil
}

// Decode reads a stored record and checks that it is the run of principal
// named id, and well formed. Anything else is ErrNotFound or an error
// saying what is wrong; nothing in it is trusted further.
func Decode(blob []byte, principal, id string) (*Record, error) {
	if len(blob) > maxRecordBytes {
		return nil, fmt.Errorf("run record of %d bytes is over the bound", len(blob))
	}
	var r Record
	if err := json.Unmarshal(blob, &r); err != nil {
		return nil, fmt.Errorf("run record does not decode: %w", err)
	}
	if r.ID != id || r.Principal != principal {
		return nil, ErrNotFound
	}
	if !r.Status.valid() {
		return nil, fmt.Errorf("run record has an unknown status")
	}
	for _, raw := range []json.RawMessage{r.Progress, r.Answer} {
		if len(raw) > 0 && (!json.Valid(raw) || raw[0] != '{') {
			return nil, fmt.Errorf("run record holds JSON that is no object")
		}
	}
	if (r.Status == Done || r.Status == Failed) && len(r.Answer) == 0 {
		return nil, fmt.Errorf("run record ended with no answer")
	}
	return &r, nil
}

// clipLogs keeps the last lines of logs within MaxLogBytes, saying how many
// it dropped in a first line.
func clipLogs(logs []string) []string {
	n, i := 0, len(logs)
	for i > 0 && n+len(logs[i-1])+8 <= MaxLogBytes {
		i--
		n += len(logs[i]) + 8
	}
	if i == 0 {
		return logs
	}
	out := make([]string, 0, len(logs)-i+1)
	out = append(out, fmt.Sprintf("(%d earlier lines not kept)", i))
	return append(out, logs[i:]...)
}
