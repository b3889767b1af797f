package builtin

import (
	"fmt"
	"strings"
)

// checkHeader refuses a header the transport would refuse at every attempt, so the job fails at
// insert instead: a name that is not an HTTP token, or a value with a control character. A CR or
// LF would otherwise split the request; Go's client refuses it, but only when sending.
func checkHeader(name, value string) error {
	if name == "" {
		return fmt.Errorf("header name is empty")
	}
	for i := 0; i < len(name); i++ {
		if !isTokenChar(name[i]) {
			return fmt.Errorf("header name %q is not valid: %q is not allowed in a name", name, name[i])
		}
	}
	for i := 0; i < len(value); i++ {
		if b := value[i]; (b < ' ' && b != '\t') || b == 0x7f {
			return fmt.Errorf("header %q: value contains the control character %q", name, b)
		}
	}
	return nil
}

// isTokenChar reports whether b may appear in a header name (RFC 9110, section 5.6.2).
func isTokenChar(b byte) bool {
	return 'a' <= b && b <= 'z' || 'A' <= b && b <= 'Z' || '0' <= b && b <= '9' ||
		strings.IndexByte("!#$%&'*+-.^_`|~", b) >= 0
}
