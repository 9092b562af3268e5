//go:build race

package resp

// raceEnabled reports a build with the race detector, under which
// sync.Pool drops items at random: the tests of memory reuse skip their
// allocation counts then.
const raceEnabled = true
