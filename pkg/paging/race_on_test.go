//go:build race

package paging

// raceDetector reports whether the tests run under -race. The tests over
// the large shared specs skip then: `make test` runs them without -race.
const raceDetector = true
