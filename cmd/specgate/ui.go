package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/specgate/specgate/pkg/ui"
)

// newUIPage builds the governance page over a's server. verify checks the
// tokens offered to sign in (nil: none but the one-time token); oneTime,
// if not empty, signs in once, by the URL printed at start; from names a
// request's client address in audit lines (nil: the socket's peer). The
// hub ticks once Run is called on it.
func newUIPage(a *app, verify func(*http.Request, string) (string, error), oneTime string, from func(*http.Request) string) (*ui.Handler, *ui.Hub) {
	hub := ui.NewHub(a.srv.UISource(), ui.HubOptions{Audit: a.auditTail, Approvals: a.approvals})
	return ui.New(ui.Options{Hub: hub, Verify: verify, OneTimeToken: oneTime, ClientAddr: from}), hub
}

// oneTimeToken is the random token of the sign-in URL printed at start.
func oneTimeToken() string {
	b := make([]byte, 24)
	rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

func listenUI(addr string) (net.Listener, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("--ui %q is not host:port", addr)
	}
	if !loopbackHost(host) {
		return nil, fmt.Errorf("--ui %q: the page beside stdio serves on loopback only (127.0.0.1:PORT); for a shared page, serve --http with auth", addr)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--ui: %w", err)
	}
	return ln, nil
}

// uiURL is the address printed at start: with a one-time token it signs in.
func uiURL(addr net.Addr, oneTime string) string {
	u := "http://" + addr.String() + "/ui/"
	if oneTime != "" {
		u += "?token=" + oneTime
	}
	return u
}

// serveUI serves the governance page alone on addr (serve --ui, beside
// stdio) until ctx ends; listening hears once whether it could listen. It listens on loopback only: the page signs in
// with the one-time token of the URL it prints, which anyone who can reach
// the port and read the terminal could use.
func serveUI(ctx context.Context, a *app, addr string, stderr io.Writer, listening chan<- error) error {
	ln, err := listenUI(addr)
	listening <- err
	if err != nil {
		return err
	}
	tok := oneTimeToken()
	page, hub := newUIPage(a, nil, tok, nil)
	mux := http.NewServeMux()
	mux.Handle("/ui", page)
	mux.Handle("/ui/", page)
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: time.Minute}
	go hub.Run(ctx)
	fmt.Fprintf(stderr, "specgate governance page (sign in once with this link): %s\n", uiURL(ln.Addr(), tok))
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := hs.Shutdown(shutdown); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	<-errc
	return nil
}
