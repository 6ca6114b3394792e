package main

import (
	"fmt"

	"github.com/specgate/specgate/pkg/config"
	"github.com/specgate/specgate/pkg/spec"
)

// approveFunc turns approve_writes (global, per spec, per endpoint) and each
// spec's approve patterns into the server's question: does a call of this
// endpoint ask the user first? Nil when nothing asks. A pattern that does
// not parse is reported naming its key.
func approveFunc(cfg *config.Config) (func(*spec.Endpoint) bool, error) {
	patterns := map[string][]spec.Pattern{}
	asks := cfg.ApproveWrites
	var errs []string
	for i := range cfg.Specs {
		sc := &cfg.Specs[i]
		if sc.ApproveWrites != nil && *sc.ApproveWrites {
			asks = true
		}
		for _, ov := range sc.Endpoints {
			if ov.ApproveWrites != nil && *ov.ApproveWrites {
				asks = true
			}
		}
		for j, raw := range sc.Approve {
			p, err := spec.ParsePattern(raw)
			if err != nil {
				errs = append(errs, fmt.Sprintf("%s.approve[%d]: %v", curationKey(i, sc), j, err))
				continue
			}
			patterns[specName(*sc)] = append(patterns[specName(*sc)], p)
			asks = true
		}
	}
	if len(errs) > 0 {
		return nil, &config.Error{File: cfg.Source, Problems: errs}
	}
	if !asks {
		return nil, nil
	}
	return func(e *spec.Endpoint) bool {
		for _, p := range patterns[e.Spec] {
			if p.Match(e) {
				return true
			}
		}
		return !e.Safe() && cfg.ApprovesWrites(cfg.SpecByName(e.Spec), e.ID, e.OperationID)
	}, nil
}
