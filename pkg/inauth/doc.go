// Package inauth decides who is calling specgate over HTTP and what that
// caller may do. It verifies bearer tokens, static ones by digest
// (StaticTokens) and JWTs against an issuer's JWKS (JWTVerifier: asymmetric
// algorithms only, keys discovered and refreshed in the background, unknown
// key ids fetched at a bounded rate), and names the Principal a token
// stands for. Scopes maps the tool calls' needs (read, invoke, admin) to
// the configured OAuth scope names; the transport puts a caller's grant in
// the context (WithGrant) and the tool path checks it again on the
// arguments it runs with (MissingFrom). Metadata serves the RFC 9728
// protected-resource document and writes the WWW-Authenticate challenges
// that point clients at it; ClientIP finds the client address behind
// trusted proxies, for failed-attempt windows. It sends nothing upstream
// and knows no tool.
package inauth
