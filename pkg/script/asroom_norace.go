//go:build !race

package script

// raceAddressRoom is 0 in a build without the race detector.
const raceAddressRoom = 0
