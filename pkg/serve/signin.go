package serve

import (
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"net/http"
	"net/netip"
	"time"

	"github.com/specgate/specgate/pkg/inauth"
	"github.com/specgate/specgate/pkg/ui"
)

// UISignIn returns the check of a token offered to the governance page,
// under the opts NewHandler is given: a static token or JWT whose
// principal holds the admin scope (any valid token while scopes are off,
// as for set_rate_limit), or the metrics token. A wrong token counts
// against its client address's failed-auth window, the one /mcp counts
// in when opts.Windows is the handler's; as on /mcp, a valid token always
// passes.
func UISignIn(b Backend, opts Options) func(r *http.Request, token string) (string, error) {
	if opts.Window <= 0 {
		opts.Window = time.Minute
	}
	if opts.Windows == nil {
		opts.Windows = NewWindows(nil, opts.MaxTracked)
	}
	now := opts.Now
	if now == nil {
		now = b.Now
	}
	m := b.Metrics()
	tokens := inauth.NewStaticTokens(opts.Tokens)
	metrics := sha256.Sum256([]byte(opts.MetricsToken))
	return func(r *http.Request, tok string) (string, error) {
		at := now()
		if opts.MetricsToken != "" {
			got := sha256.Sum256([]byte(tok))
			if subtle.ConstantTimeCompare(got[:], metrics[:]) == 1 {
				return "metrics token", nil
			}
		}
		p, ok := tokens.Lookup(tok)
		if !ok && opts.JWT != nil {
			var err error
			p, err = opts.JWT.Verify(r.Context(), tok, at)
			ok = err == nil
		}
		if ok {
			if opts.Scopes.Enabled() && (opts.Scopes.Admin == "" || !opts.Scopes.Has(p.Scopes, opts.Scopes.Admin)) {
				return "", ui.ErrNotAdmin
			}
			return p.String(), nil
		}
		if opts.FailedAuthPerWindow > 0 {
			if ok, reset := takeFailedAuth(r, &opts, m, at); !ok {
				return "", &ui.ThrottledError{RetryAfter: reset.Sub(at)}
			}
		}
		m.Refused("invalid_token")
		return "", errors.New("invalid token")
	}
}

// UIClientAddr returns how the governance page names the address a
// request came from in its audit lines: the socket's peer, or through a
// peer in trusted (http.trusted_proxies) the client X-Forwarded-For names,
// as /mcp counts inbound limits.
func UIClientAddr(trusted []netip.Prefix) func(*http.Request) string {
	return func(r *http.Request) string {
		if a := inauth.ClientIP(r, trusted); a.IsValid() {
			return a.String()
		}
		return r.RemoteAddr
	}
}
