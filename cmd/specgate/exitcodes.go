package main

import (
	"encoding/json"
	"strings"
	"unicode/utf8"

	"github.com/specgate/specgate/pkg/codes"
)

// Exit codes by class, so that a shell script can tell a limit from a
// failure without reading stderr; help and README list them.
const (
	exitOther    = 1 // config, spec, script errors, anything else
	exitUsage    = 2 // flags and arguments
	exitLimited  = 3 // refused by a limit: waiting works
	exitUpstream = 4 // the upstream failed or refused the call
	exitRefused  = 5 // the call was not sent: fix the arguments or endpoint id
)

// exitCodeFor is the exit code of a tool error code.
func exitCodeFor(code string) int {
	switch code {
	case codes.RateLimit, codes.UpstreamRateLimit, codes.QueueFull, codes.QueueTimeout:
		return exitLimited
	case codes.HTTPError, codes.Unreachable, codes.Timeout, codes.AuthError:
		return exitUpstream
	case codes.ValidationFailed, codes.NotFound, codes.NotApproved:
		return exitRefused
	}
	return exitOther
}

// maxBodyExcerpt bounds the upstream body the CLI prints with an error.
const maxBodyExcerpt = 2048

// bodyExcerpt renders an error's upstream body for a terminal: text as it
// is, JSON compact, cut at maxBodyExcerpt bytes on a rune boundary.
func bodyExcerpt(body any) string {
	var out string
	switch b := body.(type) {
	case nil:
		return ""
	case string:
		out = b
	default:
		data, err := json.Marshal(b)
		if err != nil {
			return ""
		}
		out = string(data)
	}
	out = strings.TrimSpace(out)
	if len(out) > maxBodyExcerpt {
		cut := maxBodyExcerpt
		for cut > 0 && !utf8.RuneStart(out[cut]) {
			cut--
		}
		out = out[:cut] + " …(cut)"
	}
	return out
}
