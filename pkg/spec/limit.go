package spec

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// StatedLimit is a request rate the document states for the whole API: in
// x-ratelimit-* extensions (at the top level or in info), or in plain words
// in info.description ("100 requests per minute"). specgate never enforces
// it by itself; `specgate init` and the setup_limits prompt propose it as a
// budget.
type StatedLimit struct {
	// Requests per Window.
	Requests int           `json:"requests"`
	Window   time.Duration `json:"window"`
	// Source says where it was read: "x-ratelimit-limit" or
	// "info.description".
	Source string `json:"source"`
	// Text is the sentence or value it was read from, for people.
	Text string `json:"text,omitempty"`
}

// String renders the limit as "100 requests per 1m0s".
func (l StatedLimit) String() string {
	return fmt.Sprintf("%d requests per %s", l.Requests, l.Window)
}

// statedLimit looks for a limit in the top-level and info extensions, then
// in the info description.
func statedLimit(top, info map[string]json.RawMessage, description string) *StatedLimit {
	for _, m := range []map[string]json.RawMessage{top, info} {
		if l := extensionLimit(m); l != nil {
			return l
		}
	}
	return DescriptionLimit(description)
}

// extensionLimit reads x-ratelimit-limit (or -requests) with
// x-ratelimit-window (or -period, -interval), or the same keys inside one
// x-ratelimit object. A window is a duration ("1m") or a number of seconds.
func extensionLimit(m map[string]json.RawMessage) *StatedLimit {
	if m == nil {
		return nil
	}
	fields := map[string]json.RawMessage{}
	for _, obj := range []string{"x-ratelimit", "x-rate-limit"} {
		var inner map[string]json.RawMessage
		if json.Unmarshal(m[obj], &inner) == nil {
			for k, v := range inner {
				fields[obj+"-"+strings.ToLower(k)] = v
			}
		}
	}
	for k, v := range m {
		fields[strings.ToLower(k)] = v
	}
	var l StatedLimit
	for _, prefix := range []string{"x-ratelimit-", "x-rate-limit-"} {
		for _, k := range []string{"limit", "requests"} {
			if n, ok := jsonNumber(fields[prefix+k]); ok && n > 0 && l.Requests == 0 {
				l.Requests, l.Source = int(n), prefix+k
				l.Text = string(fields[prefix+k])
			}
		}
		for _, k := range []string{"window", "period", "interval"} {
			if d, ok := jsonDuration(fields[prefix+k]); ok && d > 0 && l.Window == 0 {
				l.Window = d
			}
		}
	}
	if l.Requests == 0 {
		return nil
	}
	if l.Window == 0 {
		return nil // a count without a window states no rate
	}
	return &l
}

func jsonNumber(raw json.RawMessage) (float64, bool) {
	if raw == nil {
		return 0, false
	}
	var n float64
	if json.Unmarshal(raw, &n) == nil {
		return n, true
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		f, err := strconv.ParseFloat(strings.ReplaceAll(s, ",", ""), 64)
		return f, err == nil
	}
	return 0, false
}

func jsonDuration(raw json.RawMessage) (time.Duration, bool) {
	if n, ok := jsonNumber(raw); ok {
		return time.Duration(n * float64(time.Second)), true
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return 0, false
	}
	if d, err := time.ParseDuration(s); err == nil {
		return d, true
	}
	if d, ok := unitDuration(s); ok {
		return d, true
	}
	return 0, false
}

var rateSentence = regexp.MustCompile(`(?i)\b(\d[\d,]*)\s+(?:api\s+)?(?:requests?|calls?)\s+(?:per|an?|every|each|/)\s+(?:(\d+)\s+)?(seconds?|secs?|minutes?|mins?|hours?|hrs?|days?)\b`)

// DescriptionLimit reads a rate stated in plain words ("100 requests per
// minute", "5,000 calls per hour", "10 requests every 15 minutes"), the
// first one in s.
func DescriptionLimit(s string) *StatedLimit {
	m := rateSentence.FindStringSubmatch(s)
	if m == nil {
		return nil
	}
	n, err := strconv.Atoi(strings.ReplaceAll(m[1], ",", ""))
	if err != nil || n <= 0 {
		return nil
	}
	unit, _ := unitDuration(m[3])
	if m[2] != "" {
		k, err := strconv.Atoi(m[2])
		if err != nil || k <= 0 {
			return nil
		}
		unit *= time.Duration(k)
	}
	return &StatedLimit{Requests: n, Window: unit, Source: "info.description", Text: m[0]}
}

func unitDuration(s string) (time.Duration, bool) {
	s = strings.ToLower(strings.TrimSpace(s))
	switch {
	case strings.HasPrefix(s, "sec"), s == "s":
		return time.Second, true
	case strings.HasPrefix(s, "min"), s == "m":
		return time.Minute, true
	case strings.HasPrefix(s, "h"):
		return time.Hour, true
	case strings.HasPrefix(s, "day"), s == "d":
		return 24 * time.Hour, true
	}
	return 0, false
}
