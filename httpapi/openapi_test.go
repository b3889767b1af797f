package httpapi

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// The document and the routes agree: every route is described, every described operation is a
// route (or one of the two served without a token), and every $ref resolves.
func TestOpenAPIDescribesEveryRoute(t *testing.T) {
	var doc struct {
		OpenAPI string                                `json:"openapi"`
		Paths   map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(OpenAPI, &doc); err != nil {
		t.Fatalf("openapi.json: %v", err)
	}
	if doc.OpenAPI != "3.1.0" {
		t.Fatalf("openapi %q", doc.OpenAPI)
	}
	var described []string
	for path, ops := range doc.Paths {
		for method := range ops {
			described = append(described, strings.ToUpper(method)+" "+path)
		}
	}
	var routed []string
	for _, r := range (&api{}).routes() {
		routed = append(routed, r.pattern)
	}
	routed = append(routed, "GET /healthz", "GET /v1/openapi.json")
	slices.Sort(described)
	slices.Sort(routed)
	for _, r := range routed {
		if !slices.Contains(described, r) {
			t.Errorf("route %s is not in openapi.json", r)
		}
	}
	for _, d := range described {
		if !slices.Contains(routed, d) {
			t.Errorf("openapi.json describes %s, which is no route", d)
		}
	}
	// Every $ref points at something the document has.
	var whole map[string]any
	_ = json.Unmarshal(OpenAPI, &whole)
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			if ref, ok := x["$ref"].(string); ok {
				if !resolves(whole, ref) {
					t.Errorf("$ref %s resolves to nothing", ref)
				}
			}
			for _, y := range x {
				walk(y)
			}
		case []any:
			for _, y := range x {
				walk(y)
			}
		}
	}
	walk(whole)

}

func resolves(doc map[string]any, ref string) bool {
	var v any = doc
	for _, part := range strings.Split(strings.TrimPrefix(ref, "#/"), "/") {
		m, ok := v.(map[string]any)
		if !ok {
			return false
		}
		if v, ok = m[part]; !ok {
			return false
		}
	}
	return true
}
