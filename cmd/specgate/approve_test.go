package main

import (
	"strings"
	"testing"

	"github.com/specgate/specgate/pkg/config"
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
