package main

import (
	"strings"

	"github.com/specgate/specgate/pkg/config"
)

// missingEnvWarnings says, once per unset variable, which keys refer to it
// and what becomes of them: a header is left out (GitHub answers a bare
// "Authorization: Bearer " with 401, where no header gets the anonymous
// quota), a credential answers auth_error when a call needs it.
func missingEnvWarnings(cfg *config.Config) []string {
	var order []string
	keys := map[string][]string{}
	for _, m := range cfg.MissingEnv {
		if _, ok := keys[m.Var]; !ok {
			order = append(order, m.Var)
		}
		keys[m.Var] = append(keys[m.Var], m.Key)
	}
	var out []string
	for _, v := range order {
		var headers, other []string
		for _, k := range keys[v] {
			if strings.Contains(k, "].headers.") {
				headers = append(headers, k)
			} else {
				other = append(other, k)
			}
		}
		msg := "${" + v + "} is unset"
		if len(other) > 0 {
			msg += ": " + strings.Join(other, ", ") + refersWord(len(other))
		}
		if len(headers) > 0 {
			if len(other) > 0 {
				msg += ";"
			} else {
				msg += ":"
			}
			msg += " " + strings.Join(headers, ", ") + " left out of calls"
		}
		out = append(out, msg)
	}
	return out
}

func refersWord(n int) string {
	if n == 1 {
		return " refers to it"
	}
	return " refer to it"
}

// headersOf returns the static headers of sc to send: a header whose
// variable is unset is left out rather than sent empty.
func headersOf(sc *config.Spec) map[string]string {
	out := map[string]string{}
	for k, v := range sc.Headers {
		if len(v.MissingEnv()) > 0 {
			continue
		}
		out[k] = v.Reveal()
	}
	return out
}
