package ratelimit_test

import (
	"errors"
	"fmt"
	"time"

	"github.com/specgate/specgate/pkg/ratelimit"
)

func ExampleLimiter_AdmitAt() {
	l, err := ratelimit.New(ratelimit.Options{
		Endpoints: []ratelimit.Endpoint{
			{ID: "petstore.getPetById", Upstream: "petstore.example:443", Interval: 10 * time.Second},
			{ID: "petstore.getInventory", Upstream: "petstore.example:443", Interval: 10 * time.Second},
		},
		Budgets: []ratelimit.Budget{{Match: "petstore.example", Requests: 2, Window: time.Minute}},
	})
	if err != nil {
		panic(err)
	}
	now := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	try := func(id string, at time.Time) {
		t, err := l.AdmitAt(ratelimit.Request{Endpoint: id}, at)
		var le *ratelimit.LimitError
		if errors.As(err, &le) {
			fmt.Printf("%s: refused (%s/%s, retry in %gs)\n", id, le.Scope, le.Kind, le.RetryAfterSeconds())
			return
		}
		defer t.ReleaseAt(at)
		fmt.Printf("%s: admitted\n", id)
	}
	try("petstore.getPetById", now)
	try("petstore.getPetById", now.Add(1800*time.Millisecond))
	try("petstore.getInventory", now.Add(2*time.Second))
	try("petstore.getPetById", now.Add(10*time.Second))
	// Output:
	// petstore.getPetById: admitted
	// petstore.getPetById: refused (proxy/cooldown, retry in 8.2s)
	// petstore.getInventory: admitted
	// petstore.getPetById: refused (proxy/requests, retry in 50.25s)
}
