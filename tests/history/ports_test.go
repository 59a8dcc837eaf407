package main

import "testing"

func TestFreePortIsBelowTheEphemeralRangeAndNeverRepeats(t *testing.T) {
	low := ephemeralLow()
	seen := map[int]bool{}
	for i := 0; i < 6; i++ {
		p := freePort()
		if p <= 0 || p >= low || seen[p] {
			t.Fatalf("port %d (ephemeral range from %d, given before: %v)", p, low, seen)
		}
		seen[p] = true
	}
}
