package inauth

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/specgate/specgate/pkg/invoke"
)

// Principal is who is calling: a subject in an organisation, and its
// token's scopes. Budgets key on it, never on the token, so a rotated token
// keeps its budget. It is invoke's Principal: one type of caller.
type Principal = invoke.Principal

// TokenVerifier verifies a bearer token and names its principal.
// *JWTVerifier is one. Every refusal must match ErrInvalidToken; other
// errors are treated as refusals too.
type TokenVerifier interface {
	Verify(ctx context.Context, token string, now time.Time) (Principal, error)
}

var _ TokenVerifier = (*JWTVerifier)(nil)

// ErrInvalidToken is the error of a bearer token that failed verification.
// Its message never holds the token.
var ErrInvalidToken = errors.New("invalid bearer token")

// tokenError is a refused JWT with the reason, for logs; it matches
// ErrInvalidToken.
type tokenError struct{ reason string }

func (e *tokenError) Error() string        { return "invalid bearer token: " + e.reason }
func (e *tokenError) Is(target error) bool { return target == ErrInvalidToken }

func invalid(format string, a ...any) error { return &tokenError{reason: fmt.Sprintf(format, a...)} }

// StaticTokens maps SHA-256 digests of tokens to principals, so a lookup
// takes the same time whatever prefix of a token a caller guessed. Read-only
// after NewStaticTokens, so safe for concurrent use.
type StaticTokens map[[sha256.Size]byte]Principal

// NewStaticTokens indexes tokens by digest; empty tokens never match.
func NewStaticTokens(tokens map[string]Principal) StaticTokens {
	out := StaticTokens{}
	for tok, p := range tokens {
		if tok == "" {
			continue
		}
		out[sha256.Sum256([]byte(tok))] = p
	}
	return out
}

// Lookup returns the principal of tok.
func (st StaticTokens) Lookup(tok string) (Principal, bool) {
	p, ok := st[sha256.Sum256([]byte(tok))]
	return p, ok
}

// MaxAuthorization bounds the Authorization header; a longer one is
// refused before any parsing.
const MaxAuthorization = 8 << 10

// BearerToken returns the token of an Authorization: Bearer header, or ""
// when there is none.
func BearerToken(r *http.Request) string {
	h := r.Header.Get("Authorization")
	if len(h) < 7 || !strings.EqualFold(h[:7], "bearer ") {
		return ""
	}
	return strings.TrimSpace(h[7:])
}
