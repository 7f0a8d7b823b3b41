package detect

import "testing"

// skipPlainRef is skipPlain a byte at a time.
func skipPlainRef(b []byte, i int) int {
	for i < len(b) && plain[b[i]] {
		i++
	}
	return i
}

// skipPlain reads eight bytes at a time: every byte that stops it must stop
// it in every lane, whatever its neighbours (the bytes next to it in value
// are where carries and borrows would go wrong).
func TestSkipPlainStopsWhereAByteAtATimeDoes(t *testing.T) {
	stops := []byte{0x00, 0x01, 0x1f, '"', '\\', ']'}
	neighbours := []byte{0x20, 0x21, '!', '#', '[', '^', 0x5c ^ 0x01, 0x7f, 0x80, 0xa0, 0xdc, 0xdd, 0xff, 'a'}
	for _, stop := range stops {
		for _, n := range neighbours {
			for at := range 20 {
				b := make([]byte, 24)
				for k := range b {
					b[k] = n
				}
				b[at] = stop
				for from := 0; from <= at; from++ {
					if got, want := skipPlain(b, from), skipPlainRef(b, from); got != want {
						t.Fatalf("%#x at %d among %#x, from %d: %d, want %d", stop, at, n, from, got, want)
					}
				}
			}
		}
	}
}

func FuzzSkipPlain(f *testing.F) {
	f.Add([]byte(`plain text, then a quote" and more`), 0)
	f.Add([]byte(`abcdefg]\\\"`), 3)
	f.Add([]byte("\x7f\x80\x5c\x5d\x1f\x20\xff\x00abcdefgh"), 1)
	f.Fuzz(func(t *testing.T, b []byte, from int) {
		if from < 0 || from > len(b) {
			return
		}
		if got, want := skipPlain(b, from), skipPlainRef(b, from); got != want {
			t.Fatalf("skipPlain(%q, %d) = %d, want %d", b, from, got, want)
		}
	})
}
