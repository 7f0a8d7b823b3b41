package holdout

// Drain returns once every step recorded before it has been written to
// Redis (or, Redis failing, accounted for here). It does nothing without
// Redis.
func (h *Holdout) Drain() {
	if h.shared == nil {
		return
	}
	done := make(chan struct{})
	h.shared.queue <- step{done: done}
	<-done
}

// Probe tries an unreachable Redis again at once, as the background probe
// does every ProbeInterval.
func (h *Holdout) Probe() { h.shared.ping() }
