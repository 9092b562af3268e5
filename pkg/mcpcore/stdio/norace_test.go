//go:build !race

package stdio

// raceEnabled reports a build with the race detector (see race_test.go).
const raceEnabled = false
