//go:build !race

package spectest

const raceDetector = false
