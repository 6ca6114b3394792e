//go:build !race

package invoke

const raceDetector = false
