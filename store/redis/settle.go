package redis

import "context"

// A script settles at most a bounded number of dependents (WithSettleBatch): a fan-out of ten
// thousand steps would otherwise hold Redis, and every node waiting on it, for the whole of its
// release. What one call leaves is parked (see settleDeps in prelude.lua) and the settle script
// finishes it in further calls, each as bounded.

// SettleBatchDefault is how many dependents one script settles unless WithSettleBatch says
// otherwise: about 8 ms of Redis time for plain releases, so no settling holds other clients
// longer, and few enough calls that their round trips cost little beside it.
const SettleBatchDefault = 1000

// settleEnds is how many parked ends one settle call takes up.
const settleEnds = 100

// parkedMark heads the reply of a script that parked dependents (PARKEDMARK in prelude.lua).
const parkedMark = "\x00parked"

// unwrapParked splits the reply of a script that settles into the script's own reply and
// whether it left dependents parked.
func unwrapParked(v any) (any, bool) {
	list, ok := v.([]any)
	if !ok || len(list) == 0 || list[0] != parkedMark {
		return v, false
	}
	if len(list) == 1 { // the script's own reply was nil
		return nil, true
	}
	return list[1], true
}

// afterParked settles what a call of sc parked before the call returns, so that its caller sees
// every dependent it released or cancelled; the calls are bounded, and between them other
// clients' commands run. Should one fail, the call that parked has still happened: what is
// left is settled by the next rescue pass, on any node (Rescue settles first).
func (s *Store) afterParked(ctx context.Context, sc *script) {
	if err := s.settleAll(ctx); err != nil {
		s.cfg.logger.Warn("rota: redis settle failed; the next rescue settles what is left", "namespace", s.cfg.namespace, "after", sc.name, "err", err)
	}
}

// settleOnce runs the settle script once and returns how many ends are still parked.
func (s *Store) settleOnce(ctx context.Context) (int64, error) {
	// Not through run: what this call parks again is what the loop in settleAll is for.
	v, err := s.write(ctx, scriptSettle, s.argv(scriptSettle, []any{settleEnds}))
	if err != nil {
		return 0, err
	}
	v, _ = unwrapParked(v)
	return toInt(v), nil
}

// settleAll settles until nothing is parked.
func (s *Store) settleAll(ctx context.Context) error {
	for {
		n, err := s.settleOnce(ctx)
		if err != nil || n == 0 {
			return err
		}
	}
}
