package script

import "testing"

// macOS reports ru_maxrss in bytes: a running Go process holds megabytes.
func TestSelfPeakResidentIsBytes(t *testing.T) {
	if p := selfPeakResident(); p < 1<<20 {
		t.Errorf("peak resident memory %d: not bytes", p)
	}
}
