//go:build race

package script

// raceAddressRoom is added to a worker's address-space limit in a build
// with the race detector, whose shadow memory is mapped as the heap grows:
// without it a race-built worker ran out of address space on a tiny script
// (the package's tests run the race-built test binary as the worker).
const raceAddressRoom = 8 << 30
