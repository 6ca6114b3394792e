//go:build race

package mock

// raceDetector reports whether the tests run under -race. The test over
// every shared spec skips then: `make test` runs it without -race.
const raceDetector = true
