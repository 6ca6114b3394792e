package main

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/specgate/specgate/internal/redistest"

	"github.com/specgate/specgate/pkg/config"
	"github.com/specgate/specgate/pkg/redisstore"
	"github.com/specgate/specgate/pkg/spec"
)

func TestApproveFunc(t *testing.T) {
	cfg, err := config.Parse([]byte(`
specs:
  - location: specs/petstore.yaml
    approve_writes: true
    endpoints:
      addPet: {approve_writes: false}
  - name: shop
    location: shop.yaml
    approve: ["tag:orders", "GET /secrets/**"]
`))
	if err != nil {
		t.Fatal(err)
	}
	approve, err := approveFunc(cfg)
	if err != nil || approve == nil {
		t.Fatalf("approveFunc: nil %v, %v", approve == nil, err)
	}
	for _, tt := range []struct {
		e    spec.Endpoint
		want bool
	}{
		{spec.Endpoint{Spec: "petstore", ID: "petstore.deletePet", OperationID: "deletePet", Method: "DELETE", Path: "/pet/{id}"}, true},
		{spec.Endpoint{Spec: "petstore", ID: "petstore.addPet", OperationID: "addPet", Method: "POST", Path: "/pet"}, false},
		{spec.Endpoint{Spec: "petstore", ID: "petstore.getPet", OperationID: "getPet", Method: "GET", Path: "/pet/{id}"}, false},
		{spec.Endpoint{Spec: "shop", ID: "shop.cancel", OperationID: "cancel", Method: "POST", Path: "/cancel"}, false},
		{spec.Endpoint{Spec: "shop", ID: "shop.listOrders", OperationID: "listOrders", Method: "GET", Path: "/orders", Tags: []string{"orders"}}, true},
		{spec.Endpoint{Spec: "shop", ID: "shop.getSecret", OperationID: "getSecret", Method: "GET", Path: "/secrets/a/b"}, true},
	} {
		if got := approve(&tt.e); got != tt.want {
			t.Errorf("%s: %v, want %v", tt.e.ID, got, tt.want)
		}
	}

	none, err := config.Parse([]byte("specs: [{name: a, location: a.yaml}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if f, err := approveFunc(none); f != nil || err != nil {
		t.Errorf("nothing approves: got a func (%v)", err)
	}
	bad, err := config.Parse([]byte("specs: [{name: a, location: a.yaml, approve: [\"FETCH /x\"]}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := approveFunc(bad); err == nil || !strings.Contains(err.Error(), "specs[a].approve[0]") {
		t.Errorf("bad pattern: %v", err)
	}
}

// TestApprovalStoreSharesKeyAndSpent: two replicas on one Redis, with no
// approvals.key, sign with the same key, and a state spent on one is spent
// for the other.
func TestApprovalStoreSharesKeyAndSpent(t *testing.T) {
	rd := redistest.Start(t)
	cfg, err := config.Parse([]byte("store: {backend: redis, redis_url: \"" + rd.URL() + "\", key_prefix: \"approve-test:\"}\n"))
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.DiscardHandler)
	replica := func() *redisstore.Client {
		rc, err := redisClient(cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { rc.Close() })
		return rc
	}
	k1, spend1 := approvalStore(t.Context(), cfg, replica(), log)
	k2, spend2 := approvalStore(t.Context(), cfg, replica(), log)
	if len(k1) < 32 || string(k1) != string(k2) || spend1 == nil || spend2 == nil {
		t.Fatalf("keys %d and %d bytes, equal %v", len(k1), len(k2), string(k1) == string(k2))
	}
	if first, err := spend1(t.Context(), "state-1", time.Minute); !first || err != nil {
		t.Errorf("first spend: %v %v", first, err)
	}
	if again, err := spend2(t.Context(), "state-1", time.Minute); again || err != nil {
		t.Errorf("replay on the other replica: %v %v, want refused", again, err)
	}
	mem, _ := config.Parse([]byte("approvals: {key: \"" + strings.Repeat("z", 32) + "\"}\n"))
	if k, spend := approvalStore(t.Context(), mem, nil, log); string(k) != strings.Repeat("z", 32) || spend != nil {
		t.Errorf("memory store: key %q, spend %v", k, spend != nil)
	}
}
