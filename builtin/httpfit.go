package builtin

import (
	"cmp"
	"slices"
)

// fitHTTP fills the body and trims the result until its encoding is within limit bytes. The request
// has succeeded, so the result must fit: a result over the node's limit fails the attempt, and the
// retry sends the request again (a webhook POSTed twice for one job). Of the body and the headers,
// the larger gives way first; the body is halved, the headers dropped largest first. Only a limit
// below the size of an empty result (under 100 bytes) cannot be met.
func fitHTTP(res *HTTPResult, body *capture, limit int) {
	res.Body, res.Truncated = body.String(), body.Truncated()
	hs := headersBySize(res.Headers)
	headerBytes := 0
	for _, h := range hs {
		headerBytes += h.size
	}
	// drop removes the largest headers until over bytes are gone, or while keep says so.
	drop := func(over int, keep func() bool) {
		for len(hs) > 0 && over > 0 && keep() {
			delete(res.Headers, hs[0].name)
			over -= hs[0].size
			headerBytes -= hs[0].size
			hs = hs[1:]
			res.HeadersTruncated = true
		}
	}
	for {
		size := encodedSize(res)
		if size <= limit {
			return
		}
		bodyBytes := encodedSize(res.Body)
		switch {
		case len(hs) > 0 && headerBytes >= bodyBytes:
			drop(size-limit, func() bool { return headerBytes >= bodyBytes })
		case res.Body != "":
			body.shrink()
			res.Body, res.Truncated = body.String(), body.Truncated()
		case len(hs) > 0:
			drop(size-limit, func() bool { return true })
		default:
			return
		}
	}
}

type headerSize struct {
	name string
	size int // bytes of the encoded entry, with its colon and comma
}

// headersBySize lists the headers largest first, so that trimming drops the fewest; ties go by
// name, so that the same answer is trimmed the same way.
func headersBySize(h map[string]string) []headerSize {
	hs := make([]headerSize, 0, len(h))
	for k, v := range h {
		hs = append(hs, headerSize{name: k, size: encodedSize(k) + encodedSize(v) + 2})
	}
	slices.SortFunc(hs, func(a, b headerSize) int {
		return cmp.Or(cmp.Compare(b.size, a.size), cmp.Compare(a.name, b.name))
	})
	return hs
}
