//go:build !race

package paging

const raceDetector = false
