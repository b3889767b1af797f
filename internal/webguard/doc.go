// Package webguard holds what the HTTP API and the dashboard share to keep callers out who
// should not be there: the Host names a server without a token answers (hosts.go), the address
// a request counts against (client.go), and the limit on failed sign-ins and tokens per address
// (limiter.go). Each server answers a refusal in its own format; this package only decides.
package webguard
