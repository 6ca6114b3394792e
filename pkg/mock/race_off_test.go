//go:build !race

package mock

const raceDetector = false
