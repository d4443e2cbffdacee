package traincmd

import (
	"fmt"
	"io"
	"sync"
	"time"
)

// heartbeat is the reporter's writer when stderr is not a terminal (a log file, nohup,
// CI): it notes when a line was last written, and beat prints what goes on (doing) when
// nothing was written for plainEvery — a first step that takes minutes, the one-time
// computation of a front end's features — so that a log shows every phase over 10 s
// moving at least every 30 s (issue 41). Writes and beats are serialised.
type heartbeat struct {
	mu       sync.Mutex
	w        io.Writer
	now      func() time.Time
	last     time.Time // the last write
	midLine  bool      // the last write did not end its line
	activity string    // what goes on now; "" says nothing
	since    time.Time // when activity began
	// done of total units of the activity are finished (total 0: no count).
	done, total int
	stop        chan struct{}
	stopped     chan struct{}
}

func newHeartbeat(w io.Writer, now func() time.Time) *heartbeat {
	return &heartbeat{w: w, now: now, last: now()}
}

func (h *heartbeat) Write(p []byte) (int, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	n, err := h.w.Write(p)
	h.last = h.now()
	if len(p) > 0 {
		h.midLine = p[len(p)-1] != '\n'
	}
	return n, err
}

// doing says what goes on from now on; "" (between phases) makes beat quiet.
func (h *heartbeat) doing(what string) {
	if h == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if what != h.activity {
		h.activity, h.since = what, h.now()
		h.done, h.total = 0, 0
	}
}

// progress says how far the activity has come: done of total units.
func (h *heartbeat) progress(done, total int) {
	if h == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.done, h.total = done, total
}

// beat prints the activity and how long it has run when nothing was written for
// plainEvery.
func (h *heartbeat) beat() {
	h.mu.Lock()
	defer h.mu.Unlock()
	now := h.now()
	if h.activity == "" || now.Sub(h.last) < plainEvery {
		return
	}
	if h.midLine {
		fmt.Fprintln(h.w)
	}
	took := now.Sub(h.since)
	if h.total > 0 && h.done > 0 {
		left := time.Duration(float64(took) * float64(h.total-h.done) / float64(h.done))
		fmt.Fprintf(h.w, "%s: %d of %d, %d%% (%s so far; about %s left)\n", h.activity, h.done, h.total, 100*h.done/h.total,
			took.Round(time.Second), left.Round(time.Second))
	} else {
		fmt.Fprintf(h.w, "%s (%s so far)\n", h.activity, took.Round(time.Second))
	}
	h.last, h.midLine = now, false
}

// start runs beat every interval until close.
func (h *heartbeat) start(interval time.Duration) {
	h.stop, h.stopped = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(h.stopped)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-h.stop:
				return
			case <-t.C:
				h.beat()
			}
		}
	}()
}

// close stops the beats; nil and unstarted heartbeats are fine.
func (h *heartbeat) close() {
	if h == nil || h.stop == nil {
		return
	}
	close(h.stop)
	<-h.stopped
	h.stop = nil
}
