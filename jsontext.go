package rota

import (
	"bytes"
	"strconv"
)

// badEscape returns the first \u escape in JSON text b that no store can keep as text: a NUL,
// or a surrogate that is not half of a pair. PostgreSQL's jsonb, which args filters read through,
// refuses both, so one job holding either would fail every such filter after it. A backslash is
// only ever inside a JSON string, so every one starts an escape; text without one is let through
// at the cost of a byte search.
func badEscape(b []byte) (string, bool) {
	for i := bytes.IndexByte(b, '\\'); i >= 0 && i < len(b); {
		if i+1 < len(b) && b[i+1] != 'u' {
			i += 2 // \" \\ \n …: the escaped byte is not a backslash that starts one
		} else {
			v, ok := hex4(b, i+2)
			switch {
			case !ok: // not JSON at all: what decodes it says so
				return "", false
			case v == 0:
				return `\u0000`, true
			case v >= 0xd800 && v < 0xdc00: // a high surrogate: a low one must follow
				if w, ok := hex4(b, i+8); ok && b[i+6] == '\\' && b[i+7] == 'u' && w >= 0xdc00 && w < 0xe000 {
					i += 12
					break
				}
				return string(b[i : i+6]), true
			case v >= 0xdc00 && v < 0xe000:
				return string(b[i : i+6]), true
			default:
				i += 6
			}
		}
		next := bytes.IndexByte(b[min(i, len(b)):], '\\')
		if next < 0 {
			return "", false
		}
		i += next
	}
	return "", false
}

// hex4 reads the four hex digits at b[i:], if they are there.
func hex4(b []byte, i int) (uint64, bool) {
	if i+4 > len(b) {
		return 0, false
	}
	v, err := strconv.ParseUint(string(b[i:i+4]), 16, 16)
	return v, err == nil
}
