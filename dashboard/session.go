package dashboard

import (
	"container/list"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"
)

// Defaults for Config.
const (
	// SessionTTLDefault is how long a sign-in lasts, however much the browser is used: a
	// working day with room to spare, so an operator signs in about once a day, and a cookie
	// copied from a browser stops working by the next.
	SessionTTLDefault = 12 * time.Hour
	// SessionsMaxDefault bounds the sessions kept at once. Each sign-in makes one, and only
	// sign-out or expiry ends one; the bound keeps a script that signs in in a loop from growing
	// memory without end. When it is reached, the oldest session is ended.
	SessionsMaxDefault = 1000
)

// sessions are the dashboard's signed-in browsers, kept in memory: a random id per sign-in,
// in the cookie, that ends on sign-out, after the TTL, or when the process stops. Nothing
// about a session can be derived from the token, so a cookie that leaked is worth nothing once
// its session ended, and the token never leaves the server.
type sessions struct {
	clock clockwork.Clock
	ttl   time.Duration
	max   int

	mu sync.Mutex
	// byID is keyed by the id's hash, so that looking a cookie up takes no time that depends
	// on how much of a guessed id is right.
	byID   map[[sha256.Size]byte]*list.Element // of *session
	oldest *list.List                          // by sign-in, oldest first; also the order they expire in
}

type session struct {
	id      [sha256.Size]byte
	expires time.Time
}

func newSessions(clock clockwork.Clock, ttl time.Duration, maxSessions int) *sessions {
	return &sessions{clock: clock, ttl: ttl, max: maxSessions, byID: map[[sha256.Size]byte]*list.Element{}, oldest: list.New()}
}

// create starts a session and returns the cookie value that names it, and when it ends.
func (s *sessions) create() (string, time.Time) {
	var raw [32]byte
	rand.Read(raw[:]) // never fails: crypto/rand panics rather than return weak bytes
	value := base64.RawURLEncoding.EncodeToString(raw[:])
	now := s.clock.Now()
	sess := &session{id: sha256.Sum256([]byte(value)), expires: now.Add(s.ttl)}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.dropExpired(now)
	for s.oldest.Len() >= s.max {
		s.remove(s.oldest.Front())
	}
	s.byID[sess.id] = s.oldest.PushBack(sess)
	return value, sess.expires
}

// valid reports whether value names a session that has not ended.
func (s *sessions) valid(value string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.byID[sha256.Sum256([]byte(value))]
	if !ok {
		return false
	}
	if !s.clock.Now().Before(e.Value.(*session).expires) {
		s.remove(e)
		return false
	}
	return true
}

// end ends the session value names, if any.
func (s *sessions) end(value string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e, ok := s.byID[sha256.Sum256([]byte(value))]; ok {
		s.remove(e)
	}
}

// count returns how many sessions are kept.
func (s *sessions) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.oldest.Len()
}

// dropExpired ends the sessions past their TTL; they are the oldest, all sessions having the
// same TTL.
func (s *sessions) dropExpired(now time.Time) {
	for e := s.oldest.Front(); e != nil && !now.Before(e.Value.(*session).expires); e = s.oldest.Front() {
		s.remove(e)
	}
}

func (s *sessions) remove(e *list.Element) {
	s.oldest.Remove(e)
	delete(s.byID, e.Value.(*session).id)
}
