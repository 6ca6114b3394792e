package ui_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/specgate/specgate/pkg/ui"
)

// still is a Source with one upstream and nothing running.
type still struct{}

func (still) State(context.Context, time.Time) ui.State {
	return ui.State{Upstreams: []ui.Upstream{{Key: "api.example.com:443", Used: 3, Limit: 30, Window: "1m0s"}}}
}

func (still) CancelRun(context.Context, string, ui.Person) error { return ui.ErrNotFound }

func ExampleNew() {
	hub := ui.NewHub(still{}, ui.HubOptions{})
	hub.Tick(context.Background()) // Run ticks each second; once is enough here
	page := ui.New(ui.Options{Hub: hub, OneTimeToken: "printed-at-start"})

	get := func(path, cookie string) *http.Response {
		r := httptest.NewRequest("GET", "http://127.0.0.1:8080"+path, nil)
		if cookie != "" {
			r.Header.Set("Cookie", cookie)
		}
		w := httptest.NewRecorder()
		page.ServeHTTP(w, r)
		return w.Result()
	}
	fmt.Println("state before sign-in:", get("/ui/api/state", "").StatusCode)
	signIn := get("/ui/?token=printed-at-start", "")
	fmt.Println("the link:", signIn.StatusCode, signIn.Header.Get("Location"))
	c := signIn.Cookies()[0]
	fmt.Println("state after:", get("/ui/api/state", c.Name+"="+c.Value).StatusCode)
	fmt.Println("the link again:", get("/ui/?token=printed-at-start", "").StatusCode)
	// Output:
	// state before sign-in: 401
	// the link: 303 /ui/
	// state after: 200
	// the link again: 401
}
