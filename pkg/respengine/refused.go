package respengine

import "strings"

// refused lists the commands whose replies do not follow the
// one-command-one-reply shape of a pipeline; the sidecar's execute refuses
// them before sending anything, and its send/receive runs them. A key
// of one word refuses the command; "CMD SUB" refuses that subcommand.
var refused = map[string]bool{
	"SUBSCRIBE": true, "PSUBSCRIBE": true, "SSUBSCRIBE": true,
	"UNSUBSCRIBE": true, "PUNSUBSCRIBE": true, "SUNSUBSCRIBE": true,
	"MONITOR": true, "SYNC": true, "PSYNC": true, "REPLCONF": true, "SHUTDOWN": true, "QUIT": true,
	"CLIENT REPLY": true, "CLIENT TRACKING": true, "SCRIPT DEBUG": true,
}

// refusedFirst holds, for each first word of a refused key, whether it is
// refused itself (true) or only some of its subcommands are (false): one
// lookup per command, and none for a name of a length no key starts with.
var refusedFirst, refusedLengths = func() (map[string]bool, [32]bool) {
	first, lengths := map[string]bool{}, [32]bool{}
	for key := range refused {
		word, _, sub := strings.Cut(key, " ")
		first[word] = first[word] || !sub
		lengths[len(word)] = true
	}
	return first, lengths
}()

// RefusedName returns the command or subcommand that args name when its
// replies do not follow the one-command-one-reply shape of a pipeline
// (subscriptions, MONITOR, CLIENT REPLY, ...), in upper case, or "". It
// allocates nothing for a command that is not refused.
func RefusedName(args [][]byte) string {
	if len(args[0]) >= len(refusedLengths) || !refusedLengths[len(args[0])] {
		return ""
	}
	var buf [32]byte // longer than any refused name: such names are not refused
	key := upperInto(buf[:0], args[0])
	whole, ok := refusedFirst[string(key)]
	switch {
	case !ok:
		return ""
	case whole:
		return string(key)
	case len(args) > 1:
		if key = upperInto(append(key, ' '), args[1]); key != nil && refused[string(key)] {
			return string(key)
		}
	}
	return ""
}

// upperInto appends s in ASCII upper case to dst, which has room for 32
// bytes; nil when it does not fit.
func upperInto(dst, s []byte) []byte {
	if len(dst)+len(s) > cap(dst) {
		return nil
	}
	for _, c := range s {
		if 'a' <= c && c <= 'z' {
			c -= 'a' - 'A'
		}
		dst = append(dst, c)
	}
	return dst
}
