package cli

import "time"

// SetPriorIntervals sets PreparePriorsContext's line intervals until the returned func
// restores them.
func SetPriorIntervals(every, heartbeat time.Duration) func() {
	e, h := priorEvery, priorHeartbeat
	priorEvery, priorHeartbeat = every, heartbeat
	return func() { priorEvery, priorHeartbeat = e, h }
}
