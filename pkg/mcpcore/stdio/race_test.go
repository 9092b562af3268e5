//go:build race

package stdio

// raceEnabled reports a build with the race detector, which multiplies
// memory use: the memory tests skip then (the end-to-end tests of the
// binary measure it in CI).
const raceEnabled = true
