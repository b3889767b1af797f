package builtin

import (
	"fmt"
	"strings"
	"testing"
)

// A 2xx result fits whatever the limit, down to an empty result's size, and says what it lost.
func TestHTTPFitAlwaysFits(t *testing.T) {
	for _, limit := range []int{120, 16 << 10, 100 << 10} {
		for _, bodyLen := range []int{0, 10, OutputBytesMax} {
			headers := map[string]string{"Content-Type": "text/plain"}
			for i := range 300 {
				headers[fmt.Sprintf("X-H%03d", i)] = strings.Repeat("<", i*2) // escaped, 6 bytes each
			}
			body := newCapture(OutputBytesMax)
			_, _ = body.Write([]byte(strings.Repeat("é", bodyLen/2)))
			res := &HTTPResult{Status: 200, Headers: headers}
			fitHTTP(res, body, limit)
			if size := encodedSize(res); size > limit {
				t.Errorf("limit %d, body %d: result is %d bytes", limit, bodyLen, size)
			}
			if !res.HeadersTruncated || len(res.Headers) == 301 {
				t.Errorf("limit %d, body %d: %d headers kept, headers_truncated %v", limit, bodyLen, len(res.Headers), res.HeadersTruncated)
			}
			if res.Truncated != (len(res.Body) < bodyLen) {
				t.Errorf("limit %d, body %d: %d bytes of body kept, truncated %v", limit, bodyLen, len(res.Body), res.Truncated)
			}
		}
	}
	// What fits is left alone, and the smallest headers are the last to go.
	res := &HTTPResult{Status: 200, Headers: map[string]string{"A": "1", "B": strings.Repeat("b", 5000)}}
	fitHTTP(res, newCapture(10), 1<<20)
	if res.Truncated || res.HeadersTruncated || len(res.Headers) != 2 {
		t.Fatalf("result = %+v", res)
	}
	fitHTTP(res, newCapture(10), 1000)
	if res.Truncated || !res.HeadersTruncated || len(res.Headers) != 1 || res.Headers["A"] != "1" {
		t.Fatalf("result = %+v", res)
	}
}
