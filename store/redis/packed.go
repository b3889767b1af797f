package redis

import (
	"errors"
	"fmt"

	"github.com/rotahq/rota/store"
)

// A claim hands back each row packed as one string: cmsgpack.pack of the row's flat field
// list, a MessagePack array of strings (lua/claim.lua). Reading it needs only the two
// MessagePack types it holds, so it is read here rather than through a general decoder, and
// every field is a substring of the packed row: a claim of a hundred jobs is a hundred strings
// to allocate, not three thousand.

var errPacked = errors.New("malformed packed row")

// decodePackedJobs reads a claim's list of packed rows.
func decodePackedJobs(v any) ([]*store.JobRow, error) { return decodeListWith(v, readPacked) }

// readPacked reads a packed row into f.
func readPacked(v any, f *jobFields) error {
	s, ok := v.(string)
	if !ok {
		return fmt.Errorf("unexpected reply %T", v)
	}
	n, s, err := packedArray(s)
	if err != nil {
		return err
	}
	if n%2 != 0 {
		return fmt.Errorf("%w: %d elements", errPacked, n)
	}
	for range n / 2 {
		var k, v string
		if k, s, err = packedString(s); err != nil {
			return err
		}
		if v, s, err = packedString(s); err != nil {
			return err
		}
		f.set(k, v)
	}
	if s != "" {
		return fmt.Errorf("%w: %d bytes after its last field", errPacked, len(s))
	}
	return nil
}

// packedArray reads an array header: its length and what follows it. An empty Lua table
// packs as an empty array, and cmsgpack packs a table of up to 15 elements as a fixarray.
func packedArray(s string) (int, string, error) {
	if s == "" {
		return 0, "", errPacked
	}
	switch b := s[0]; {
	case b&0xf0 == 0x90: // fixarray
		return int(b & 0x0f), s[1:], nil
	case b == 0xdc && len(s) >= 3: // array 16
		return be(s[1:3]), s[3:], nil
	case b == 0xdd && len(s) >= 5: // array 32
		return be(s[1:5]), s[5:], nil
	}
	return 0, "", fmt.Errorf("%w: no array header (0x%02x)", errPacked, s[0])
}

// packedString reads a string (str or bin, which cmsgpack may use for the same bytes) and what
// follows it.
func packedString(s string) (string, string, error) {
	if s == "" {
		return "", "", fmt.Errorf("%w: ends inside", errPacked)
	}
	var n, h int
	switch b := s[0]; {
	case b&0xe0 == 0xa0: // fixstr
		n, h = int(b&0x1f), 1
	case (b == 0xd9 || b == 0xc4) && len(s) >= 2: // str 8, bin 8
		n, h = int(s[1]), 2
	case (b == 0xda || b == 0xc5) && len(s) >= 3: // str 16, bin 16
		n, h = be(s[1:3]), 3
	case (b == 0xdb || b == 0xc6) && len(s) >= 5: // str 32, bin 32
		n, h = be(s[1:5]), 5
	default:
		return "", "", fmt.Errorf("%w: no string header (0x%02x)", errPacked, s[0])
	}
	if len(s)-h < n {
		return "", "", fmt.Errorf("%w: a string of %d bytes in %d", errPacked, n, len(s)-h)
	}
	return s[h : h+n], s[h+n:], nil
}

// be is a big-endian unsigned integer of 2 or 4 bytes.
func be(b string) int {
	n := 0
	for i := range len(b) {
		n = n<<8 | int(b[i])
	}
	return n
}
