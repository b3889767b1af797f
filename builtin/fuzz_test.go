package builtin_test

import (
	"encoding/json"
	"testing"

	"github.com/rotahq/rota/builtin"
)

// FuzzValidate feeds arbitrary args to the built-in kinds' check, which the CLI and the HTTP API
// run on what any caller sends. It must never panic, and args it accepts must survive a round
// trip: decoded and encoded again, they are still accepted (what a node stores is what it runs).
func FuzzValidate(f *testing.F) {
	for _, seed := range []string{
		`{"program":"echo","args":["hi"]}`,
		`{"program":"sh","args":["-c","exit 1"],"env":{"A":"b"},"dir":"/tmp","timeout":"5s","max_output_bytes":100}`,
		`{"program":""}`,
		`{"program":"x","env":{"":"v"}}`,
		`{"program":"x","timeout":"-1s"}`,
		`{"url":"https://example.com/hook","method":"POST","body":"{}","headers":{"Authorization":"Bearer x"}}`,
		`{"url":"ftp://x"}`,
		`{"url":"http://x","headers":{"X":"a\r\nB: c"}}`,
		`{"url":"http://x","timeout":"1h","max_response_bytes":999999999}`,
		`[]`, `null`, `"s"`, `{"unknown":1}`, `{`,
	} {
		f.Add(builtin.KindExec, []byte(seed))
		f.Add(builtin.KindHTTP, []byte(seed))
	}
	f.Fuzz(func(t *testing.T, kind string, args []byte) {
		if !builtin.IsKind(kind) {
			kind = builtin.KindExec
		}
		if builtin.Validate(kind, args) != nil {
			return
		}
		var v any = &builtin.ExecArgs{}
		if kind == builtin.KindHTTP {
			v = &builtin.HTTPArgs{}
		}
		if err := json.Unmarshal(args, v); err != nil {
			t.Fatalf("Validate accepted %s args %q that do not decode: %v", kind, args, err)
		}
		again, err := json.Marshal(v)
		if err != nil {
			t.Fatalf("accepted %s args %q do not encode: %v", kind, args, err)
		}
		if err := builtin.Validate(kind, again); err != nil {
			t.Fatalf("accepted %s args %q, encoded again as %s, are refused: %v", kind, args, again, err)
		}
	})
}
