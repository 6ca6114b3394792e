package paging

import "github.com/specgate/specgate/internal/spectest"

// Specs for tests, shared with invoke's tests.
var (
	parseSpec      = spectest.Parse
	endpoint       = spectest.Endpoint
	skipLargeSpecs = spectest.SkipLarge
	sharedSpec     = spectest.Shared
	decodeBody     = spectest.DecodeJSON
)
