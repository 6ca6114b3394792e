//go:build race

package spectest

// raceDetector reports whether the tests run under -race.
const raceDetector = true
