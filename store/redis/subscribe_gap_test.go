package redis

import (
	"context"
	"testing"
	"time"

	"github.com/rotahq/rota/internal/redistest"
	"github.com/rotahq/rota/store"
)

// Subscribe returns when the first SUBSCRIBE failed and keeps retrying. Whatever was published
// between its return and the subscription that finally lands is lost, so, as after any other gap
// (TestSubscriberReconnects), the subscribers are told to look again.
func TestFirstSubscribeFailedThenLookAgain(t *testing.T) {
	url, _ := redistest.Server(t)
	s := openURL(t, url, "sub1", WithAutoMigrate())
	c := redistest.Client(t, url)
	ctx := t.Context()
	if err := c.Ping(ctx).Err(); err != nil { // c's connection is made before the limit
		t.Fatal(err)
	}
	// No new connection is accepted: the subscriber's first attempt fails.
	n, err := c.Do(ctx, "CLIENT", "LIST").Text()
	if err != nil {
		t.Fatal(err)
	}
	conns := 0
	for _, ch := range n {
		if ch == '\n' {
			conns++
		}
	}
	if err := c.ConfigSet(ctx, "maxclients", itoa(conns)).Err(); err != nil {
		t.Fatal(err)
	}
	ch, err := s.Subscribe(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// Published while the subscriber is not subscribed: lost.
	if err := c.Publish(ctx, s.channel, "i lost").Err(); err != nil {
		t.Fatal(err)
	}
	if err := c.ConfigSet(ctx, "maxclients", "10000").Err(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		m, err := c.PubSubNumSub(ctx, s.channel).Result()
		if err != nil {
			t.Fatal(err)
		}
		if m[s.channel] == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the subscriber never subscribed")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := c.Publish(ctx, s.channel, "i after").Err(); err != nil {
		t.Fatal(err)
	}
	tctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	for {
		select {
		case n := <-ch:
			if n.Topic == store.TopicChanged {
				return // told to look again
			}
			if n.Topic == store.TopicInsert && n.Queue == "after" {
				t.Fatal("the subscription landed after a failed first attempt, and no TopicChanged came before the next notification: what was published in the gap (queue \"lost\") is never looked for")
			}
		case <-tctx.Done():
			t.Fatal("no notification at all")
		}
	}
}

func itoa(n int) string {
	b := []byte{}
	for n > 0 || len(b) == 0 {
		b = append([]byte{byte('0' + n%10)}, b...)
		n /= 10
	}
	return string(b)
}
