package config

import (
	"strings"
	"testing"
	"time"
)

func TestSpecMock(t *testing.T) {
	tests := []struct {
		name     string
		mock     string // the value of specs[0].mock
		on       bool
		requests int // 0: unset
		window   time.Duration
		cooldown time.Duration
		problems []string // from Parse or Validate; empty: valid
	}{
		{name: "left out", mock: "", on: false},
		{name: "true", mock: "true", on: true},
		{name: "false", mock: "false", on: false},
		{name: "empty mapping", mock: "{}", on: true},
		{name: "a quota", mock: "{requests_per_window: 5, window: 10s, cooldown: 2s}", on: true,
			requests: 5, window: 10 * time.Second, cooldown: 2 * time.Second},
		{name: "a cooldown alone", mock: "{cooldown: 1s}", on: true, cooldown: time.Second},
		{name: "zero quota", mock: "{requests_per_window: 0, window: 10s}",
			problems: []string{"specs[pets].mock.requests_per_window: must be positive (got 0)"}},
		{name: "negative quota", mock: "{requests_per_window: -3, window: 10s}",
			problems: []string{"specs[pets].mock.requests_per_window: must be positive (got -3)"}},
		{name: "a count without a window", mock: "{requests_per_window: 5}",
			problems: []string{"specs[pets].mock.window: is required with requests_per_window"}},
		{name: "a window without a count", mock: "{window: 10s}",
			problems: []string{"specs[pets].mock.window: needs requests_per_window"}},
		{name: "zero window", mock: "{requests_per_window: 5, window: 0}",
			problems: []string{"specs[pets].mock.window: must be positive (got 0s)"}},
		{name: "zero cooldown", mock: "{cooldown: 0s}",
			problems: []string{"specs[pets].mock.cooldown: must be positive (got 0s)"}},
		{name: "misspelt key", mock: "{request_per_window: 5}",
			problems: []string{`unknown key "request_per_window" (did you mean "requests_per_window"?)`}},
		{name: "not a bool or mapping", mock: "[1]",
			problems: []string{"specs[0].mock"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc := "specs:\n  - name: pets\n    location: pets.yaml\n"
			if tt.mock != "" {
				doc += "    mock: " + tt.mock + "\n"
			}
			c, err := Parse([]byte(doc))
			if err == nil {
				err = c.Validate()
			}
			if len(tt.problems) > 0 {
				if err == nil {
					t.Fatalf("no problem, want %q", tt.problems)
				}
				for _, p := range tt.problems {
					if !strings.Contains(err.Error(), p) {
						t.Errorf("error\n%s\ndoes not contain\n%s", err, p)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			m := c.Specs[0].Mock
			if m.On != tt.on {
				t.Errorf("On = %v, want %v", m.On, tt.on)
			}
			if got := deref(m.RequestsPerWindow); got != tt.requests {
				t.Errorf("requests_per_window = %d, want %d", got, tt.requests)
			}
			if got := time.Duration(deref(m.Window)); got != tt.window {
				t.Errorf("window = %s, want %s", got, tt.window)
			}
			if got := time.Duration(deref(m.Cooldown)); got != tt.cooldown {
				t.Errorf("cooldown = %s, want %s", got, tt.cooldown)
			}
		})
	}
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}
