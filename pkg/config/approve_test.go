package config

import (
	"strings"
	"testing"
	"time"
)

func TestApprovesWritesResolves(t *testing.T) {
	cfg, err := Parse([]byte(`
approve_writes: true
approvals: {ttl: 2m}
specs:
  - name: pets
    location: pets.yaml
    approve: ["tag:store"]
    endpoints:
      addPet: {approve_writes: false}
  - name: shop
    location: shop.yaml
    approve_writes: false
    endpoints:
      shop.placeOrder: {approve_writes: true}
`))
	if err != nil {
		t.Fatal(err)
	}
	pets, shop := cfg.SpecByName("pets"), cfg.SpecByName("shop")
	for _, tt := range []struct {
		s      *Spec
		id, op string
		want   bool
	}{
		{pets, "pets.deletePet", "deletePet", true},
		{pets, "pets.addPet", "addPet", false},
		{shop, "shop.cancel", "cancel", false},
		{shop, "shop.placeOrder", "placeOrder", true},
		{nil, "other.x", "x", true},
	} {
		if got := cfg.ApprovesWrites(tt.s, tt.id, tt.op); got != tt.want {
			t.Errorf("%s: %v, want %v", tt.id, got, tt.want)
		}
	}
	if got := cfg.ApprovalTTL(); got != 2*time.Minute {
		t.Errorf("ttl %v", got)
	}
}

func TestApprovalsValidate(t *testing.T) {
	cfg, err := Parse([]byte("approvals: {key: short, ttl: -1s}\n"))
	if err != nil {
		t.Fatal(err)
	}
	err = cfg.Validate()
	if err == nil || !strings.Contains(err.Error(), "approvals.key: must be at least 32 bytes") || !strings.Contains(err.Error(), "approvals.ttl: must not be negative") {
		t.Errorf("err = %v", err)
	}
	cfg, err = Parse([]byte("approvals: {key: " + strings.Repeat("x", 32) + "}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(); err != nil {
		t.Errorf("a 32-byte key: %v", err)
	}
}

func TestApprovalChannel(t *testing.T) {
	tests := []struct {
		yaml    string
		want    Channel
		problem string
	}{
		{"approve_writes: true\n", ChannelAuto, ""},
		{"approvals: {channel: elicit}\n", ChannelElicit, ""},
		{"approvals: {channel: page}\n", ChannelPage, ""},
		{"approvals: {channel: auto}\n", ChannelAuto, ""},
		{"approvals: {channel: email}\n", "", "approvals.channel: must be elicit, page or auto"},
	}
	for _, tt := range tests {
		cfg, err := Parse([]byte(tt.yaml))
		if err != nil {
			t.Fatal(err)
		}
		err = cfg.Validate()
		if tt.problem != "" {
			if err == nil || !strings.Contains(err.Error(), tt.problem) {
				t.Errorf("%q: err = %v, want %q", tt.yaml, err, tt.problem)
			}
			continue
		}
		if err != nil || cfg.ApprovalChannel() != tt.want {
			t.Errorf("%q: channel %q, err %v; want %q", tt.yaml, cfg.ApprovalChannel(), err, tt.want)
		}
	}
}
