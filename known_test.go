package focusgate

import "testing"

func TestKnownRemembersAndANilKnownForgets(t *testing.T) {
	var none *Known
	none.SetCount("o200k_base", 7)
	none.SetKey("k")
	none.SetSound()
	if _, ok := none.Count("o200k_base"); ok {
		t.Error("a nil Known knows a count")
	}
	if _, ok := none.Key(); ok || none.Sound() {
		t.Error("a nil Known knows a key or soundness")
	}

	k := new(Known)
	if _, ok := k.Count("o200k_base"); ok {
		t.Error("a new Known knows a count")
	}
	k.SetCount("o200k_base", 7)
	k.SetCount("cl100k_base", 9)
	k.SetCount("o200k_base", 8) // the first count stands: a text has one
	for enc, want := range map[string]int{"o200k_base": 7, "cl100k_base": 9} {
		if n, ok := k.Count(enc); !ok || n != want {
			t.Errorf("Count(%q) = %d, %v; want %d", enc, n, ok, want)
		}
	}
	k.SetKey("hash")
	k.SetSound()
	if key, ok := k.Key(); !ok || key != "hash" || !k.Sound() {
		t.Errorf("Key() = %q, %v, Sound() = %v; want hash, true, true", key, ok, k.Sound())
	}
}
