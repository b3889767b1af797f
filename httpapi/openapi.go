package httpapi

import _ "embed"

// OpenAPI is the API's OpenAPI 3.1 description, served at GET /v1/openapi.json. docs/api.md is
// the prose beside it.
//
//go:embed openapi.json
var OpenAPI []byte
