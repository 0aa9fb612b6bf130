package events

import (
	"context"

	"github.com/nats-io/nats.go"
)

// directReplies subscribes to a fresh inbox for the answers of one
// batched direct get of at most batch messages. The answers go to a
// channel sized for the whole batch and its end-of-batch status:
// SubscribeSync would allocate the connection's default pending channel
// (65,536 entries, half a megabyte) on every read, which made short reads
// (a run or a task caught up from its cached state) cost more in
// allocation and garbage collection than the read itself.
func (s *Store) directReplies(batch int) (inbox string, next func(ctx context.Context) (*nats.Msg, error), unsub func(), err error) {
	inbox = s.nc.NewInbox()
	ch := make(chan *nats.Msg, max(batch, 1)+2)
	sub, err := s.nc.ChanSubscribe(inbox, ch)
	if err != nil {
		return "", nil, nil, err
	}
	next = func(ctx context.Context) (*nats.Msg, error) {
		select {
		case m := <-ch:
			return m, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return inbox, next, func() { _ = sub.Unsubscribe() }, nil
}
