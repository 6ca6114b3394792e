package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"time"
)

// cmdHealthcheck is `specgate healthcheck [URL]`: GET the URL (default
// the local /readyz) and exit 0 on a 2xx. It is the container image's
// health check: the image has no shell, curl or wget.
func cmdHealthcheck(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	c := newFlags("healthcheck", stdout, stderr)
	var timeout time.Duration
	c.timeout(&timeout, 3*time.Second, "give up after `DURATION` (30s, 2m; a bare number counts seconds)")
	rest, err := c.parse(args)
	if err != nil {
		return err
	}
	if len(rest) > 1 {
		return c.usageError("at most one URL")
	}
	url := "http://127.0.0.1:8080/readyz"
	if len(rest) == 1 {
		url = rest[0]
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%s answered %s", url, resp.Status)
	}
	return nil
}
