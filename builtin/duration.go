package builtin

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"
)

// Duration is a timeout in job args: a Go duration string ("30s", "1m30s") or a number of
// seconds, because JSON has no duration type and both forms are what people write.
type Duration time.Duration

// UnmarshalJSON accepts "30s" or 30.
func (d *Duration) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		v, err := time.ParseDuration(s)
		if err != nil {
			return fmt.Errorf("timeout: %w", err)
		}
		*d = Duration(v)
		return nil
	}
	var secs float64
	if err := json.Unmarshal(b, &secs); err != nil {
		return fmt.Errorf("timeout: want a duration such as \"30s\" or a number of seconds, got %s", b)
	}
	*d = Duration(secs * float64(time.Second))
	return nil
}

// MarshalJSON writes the duration as a string such as "30s".
func (d Duration) MarshalJSON() ([]byte, error) {
	return json.Marshal(time.Duration(d).String())
}

// orDefault returns d, or def when d is zero; a negative d is an error.
func (d Duration) orDefault(def time.Duration) (time.Duration, error) {
	switch {
	case d < 0:
		return 0, fmt.Errorf("timeout %v is negative", time.Duration(d))
	case d == 0:
		return def, nil
	}
	return time.Duration(d), nil
}

// decodeStrict decodes b into v, refusing fields v does not have: a misspelt "arg" must fail the
// job instead of running the program without its arguments.
func decodeStrict(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return fmt.Errorf("unexpected data after the args object")
	}
	return nil
}
