package focusgate

import "sync"

// Known is what has been worked out about one page's text: its token count
// under each encoding, its hash, and that its lines are sound. Detection
// makes one for each page it finds and keeps it with the page for as long as
// it remembers the text the page was found in, so that a page sent again (an
// agent sends every page again in each later request of its conversation,
// and a cache hit is a page seen before) is neither counted, hashed nor
// checked again. Looking each of these up by the text instead would hash
// and compare the whole page, a hundred kilobytes and more, every time.
//
// A Known describes one text only: whoever changes a page's text must not
// pass its Known along. A nil *Known knows nothing and remembers nothing.
type Known struct {
	mu     sync.Mutex
	counts []knownCount
	key    string
	sound  bool
}

type knownCount struct {
	encoding string
	n        int
}

// Count returns the page's token count under encoding, if known.
func (k *Known) Count(encoding string) (int, bool) {
	if k == nil {
		return 0, false
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, c := range k.counts {
		if c.encoding == encoding {
			return c.n, true
		}
	}
	return 0, false
}

// SetCount records the page's token count under encoding.
func (k *Known) SetCount(encoding string, n int) {
	if k == nil {
		return
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, c := range k.counts {
		if c.encoding == encoding {
			return
		}
	}
	k.counts = append(k.counts, knownCount{encoding, n})
}

// Key returns the page's hash, as cache keys hold it, if known.
func (k *Known) Key() (string, bool) {
	if k == nil {
		return "", false
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.key, k.key != ""
}

// SetKey records the page's hash.
func (k *Known) SetKey(key string) {
	if k == nil {
		return
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	k.key = key
}

// Sound says whether the page's lines were found sound: within its text,
// in order.
func (k *Known) Sound() bool {
	if k == nil {
		return false
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.sound
}

// SetSound records that the page's lines are sound.
func (k *Known) SetSound() {
	if k == nil {
		return
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	k.sound = true
}
