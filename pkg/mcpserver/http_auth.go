package mcpserver

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/specgate/specgate/pkg/invoke"
)

// Principal is who is calling: a subject in an organisation, and its
// token's scopes. Budgets key on it, never on the token, so a rotated token
// keeps its budget. It is invoke's Principal: one type of caller.
type Principal = invoke.Principal

// ErrInvalidToken is the error of a bearer token that failed verification.
// Its message never holds the token.
var ErrInvalidToken = errors.New("invalid bearer token")

// tokenError is a refused JWT with the reason, for logs; it matches
// ErrInvalidToken.
type tokenError struct{ reason string }

func (e *tokenError) Error() string        { return "invalid bearer token: " + e.reason }
func (e *tokenError) Is(target error) bool { return target == ErrInvalidToken }

func invalid(format string, a ...any) error { return &tokenError{reason: fmt.Sprintf(format, a...)} }

// staticTokens maps SHA-256 digests of tokens to principals, so a lookup
// takes the same time whatever prefix of a token a caller guessed.
type staticTokens map[[sha256.Size]byte]Principal

func newStaticTokens(tokens map[string]Principal) staticTokens {
	out := staticTokens{}
	for tok, p := range tokens {
		if tok == "" {
			continue
		}
		out[sha256.Sum256([]byte(tok))] = p
	}
	return out
}

func (st staticTokens) lookup(tok string) (Principal, bool) {
	p, ok := st[sha256.Sum256([]byte(tok))]
	return p, ok
}

// bearerToken returns the token of an Authorization: Bearer header, or ""
// when there is none.
func bearerToken(r *http.Request) string {
	h := r.Header.Get("Authorization")
	if len(h) < 7 || !strings.EqualFold(h[:7], "bearer ") {
		return ""
	}
	return strings.TrimSpace(h[7:])
}

// retryAfterHeader formats a wait as whole seconds, rounded up, at least 1.
func retryAfterHeader(d time.Duration) string {
	s := int64((d + time.Second - 1) / time.Second)
	if s < 1 {
		s = 1
	}
	return strconv.FormatInt(s, 10)
}
