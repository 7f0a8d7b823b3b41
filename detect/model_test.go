package detect

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"
)

// LeadingModel reads the model from a body's first bytes only: a model named
// after the conversation is left to detection's walk.
func TestLeadingModel(t *testing.T) {
	conversation := `"messages":[{"role":"user","content":"` + strings.Repeat("a page line\\n", leadingBytes/12+1) + `"}]`
	tests := []struct {
		name, body, want string
	}{
		{"first", `{"model":"gpt-4.1","messages":[]}`, "gpt-4.1"},
		{"after settings", `{"stream":true,"max_tokens":1024,"metadata":{"user_id":"u"},"model":"claude-sonnet-4-5","messages":[]}`, "claude-sonnet-4-5"},
		{"spaces", " {\n  \"model\" : \"gpt-4.1\"\n}", "gpt-4.1"},
		{"escaped value", `{"model":"gpt-4.1-\u006dini"}`, "gpt-4.1-mini"},
		{"escaped name", `{"mod\u0065l":"gpt-4.1"}`, ""},
		{"after long settings", `{"metadata":{"user_id":"` + strings.Repeat("u", namedWithin) + `"},"model":"gpt-4.1"}`, ""},
		{"first of duplicates", `{"model":"gpt-4.1","model":"o3"}`, "gpt-4.1"},
		{"before a long conversation", `{"model":"gpt-4.1",` + conversation + `}`, "gpt-4.1"},
		{"after a long conversation", `{` + conversation + `,"model":"gpt-4.1"}`, ""},
		{"no model", `{"messages":[]}`, ""},
		{"not a string", `{"model":4,"messages":[]}`, ""},
		{"nested only", `{"metadata":{"model":"gpt-4.1"}}`, ""},
		{"not an object", `["model","gpt-4.1"]`, ""},
		{"not JSON", `model: gpt-4.1`, ""},
		{"cut in the model", `{"model":"gpt-4.1`, ""},
		{"empty", ``, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := LeadingModel([]byte(tt.body)); got != tt.want {
				t.Errorf("LeadingModel = %q, want %q", got, tt.want)
			}
		})
	}
}

// Whatever LeadingModel reads from a valid body is the body's first "model"
// member, as a JSON reader decodes it. (Bytes that are not UTF-8 it keeps as
// they came, as detection does, where encoding/json writes U+FFFD.)
func FuzzLeadingModel(f *testing.F) {
	for _, s := range []string{
		`{"model":"gpt-4.1","messages":[]}`,
		`{"mod\u0065l":"a\"b","model":"c"}`,
		`{"messages":[{"content":"x"}],"model":"gpt-4.1"}`,
		`{"a":{"model":"x"},"model":"y"}`,
		`{"model":null}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		got := LeadingModel(body)
		if got == "" || !utf8.ValidString(got) || !json.Valid(body) {
			return
		}
		if want, ok := firstMember(body, "model"); !ok || got != want {
			t.Errorf("LeadingModel(%q) = %q, want %q (found: %v)", body, got, want, ok)
		}
	})
}

// TrailingModel reads the model from a body's end, where the Python SDKs
// write it, and says when its answer is not sure, so that the caller scans
// forward; QuickModel gives the label either way.
func TestTrailingModel(t *testing.T) {
	conversation := `"messages":[{"role":"user","content":"` + strings.Repeat(`a \"quoted\" page line\\\n`, trailingBytes/20+1) + `"}]`
	tests := []struct {
		name, body string
		want       string
		sure       bool
		quick      string
	}{
		{"last", `{` + conversation + `,"model":"gpt-4.1"}`, "gpt-4.1", true, "gpt-4.1"},
		{"before settings", `{` + conversation + `,"model":"gpt-4.1","temperature":0.1,"stop":null,"tool_choice":{"type":"auto"},"tags":["a}","b]"]}`, "gpt-4.1", true, "gpt-4.1"},
		{"spaces", "{" + conversation + " ,\n  \"model\" : \"gpt-4.1\" \n}\n", "gpt-4.1", true, "gpt-4.1"},
		{"escaped name and value", `{` + conversation + `,"mod\u0065l":"gpt-4.1-\u006dini"}`, "gpt-4.1-mini", true, "gpt-4.1-mini"},
		{"a value ending in escaped backslashes", `{` + conversation + `,"model":"gpt-4.1","user":"a\\\\"}`, "gpt-4.1", true, "gpt-4.1"},
		{"last of duplicates", `{"model":"gpt-4.1",` + conversation + `,"model":"o3"}`, "o3", true, "gpt-4.1"},
		{"a later value holding quotes", `{"messages":[],"model":"gpt-4.1","user":"say \"model\":\"o3\" \\"}`, "gpt-4.1", true, "gpt-4.1"},
		{"small body without a model", `{"messages":[],"temperature":0}`, "", true, ""},
		{"empty object", ` { } `, "", true, ""},
		{"nested only", `{` + conversation + `,"metadata":{"model":"gpt-4.1"}}`, "", false, ""},
		{"named first", `{"model":"gpt-4.1",` + conversation + `}`, "", false, "gpt-4.1"},
		{"named early, not first", `{"stream":true,"metadata":{"user_id":"` + strings.Repeat("u", 600) + `"},"model":"gpt-4.1",` + conversation + `}`, "", false, "gpt-4.1"},
		{"named before long settings", `{` + conversation + `,"model":"gpt-4.1","tools":[{"description":"` + strings.Repeat("t", trailingBytes) + `"}]}`, "", false, "gpt-4.1"},
		{"not a string", `{` + conversation + `,"model":4}`, "", false, "4"},
		{"not an object", `["model","gpt-4.1"]`, "", false, ""},
		{"not JSON", `model: gpt-4.1`, "", false, ""},
		{"cut", `{"messages":[],"model":"gpt-4.1`, "", false, ""},
		{"empty", ``, "", false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.sure && !json.Valid([]byte(tt.body)) {
				t.Fatalf("the body is not valid JSON")
			}
			got, sure := TrailingModel([]byte(tt.body))
			if got != tt.want || sure != tt.sure {
				t.Errorf("TrailingModel = %q, %v; want %q, %v", got, sure, tt.want, tt.sure)
			}
			if got := QuickModel([]byte(tt.body)); got != tt.quick {
				t.Errorf("QuickModel = %q, want %q", got, tt.quick)
			}
		})
	}
}

// Whatever TrailingModel is sure of in a valid body is the body's last
// "model" member as a JSON reader decodes it, the one the upstream reads,
// or none when the body has none. On any bytes it returns.
func FuzzTrailingModel(f *testing.F) {
	for _, s := range []string{
		`{"messages":[{"content":"x"}],"model":"gpt-4.1"}`,
		`{"model":"a","messages":[],"model":"b","n":1}`,
		`{"a":"\\\"}","model":"c"}`,
		`{"a":{"model":"x"},"b":[1,{"c":"]"}],"model":"y"}`,
		`{"model":null}`,
		`{"messages":[]}`,
		`{}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		got, sure := TrailingModel(body)
		if !json.Valid(body) {
			return
		}
		// Model answers from the end when it can, as a scan would.
		if m, scanned := Model(body), scanModel(body); m != scanned {
			t.Errorf("Model(%q) = %q, a scan reads %q", body, m, scanned)
		}
		if !sure {
			return
		}
		if got != "" && !utf8.ValidString(got) {
			return // kept as it came, where encoding/json writes U+FFFD
		}
		// Sure of "" is sure there is no model.
		want, found, str := lastMember(body, "model")
		if got != want || found && !str {
			t.Errorf("TrailingModel(%q) = %q, sure; want %q (found: %v, a string: %v)", body, got, want, found, str)
		}
	})
}

// lastMember decodes the last top-level member of a valid JSON object named
// name: found says there is one, str that it is a string, value is it.
func lastMember(body []byte, name string) (value string, found, str bool) {
	dec := json.NewDecoder(bytes.NewReader(body))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return "", false, false
	}
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return "", false, false
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return "", false, false
		}
		if key == name {
			value, found = "", true
			str = json.Unmarshal(v, &value) == nil
		}
	}
	return value, found, str
}

// firstMember decodes the first top-level member of a valid JSON object named
// name, when it is a string.
func firstMember(body []byte, name string) (string, bool) {
	dec := json.NewDecoder(bytes.NewReader(body))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return "", false
	}
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return "", false
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return "", false
		}
		if key == name {
			var s string
			err := json.Unmarshal(v, &s)
			return s, err == nil
		}
	}
	return "", false
}

// Model reads a body whose model neither its start nor its end names by a
// scan of its members, in place: the skips of the busy path ask it when
// memory is short, and a copy of a large body is what they are spared.
func TestModelReadsTheBodyInPlace(t *testing.T) {
	var msgs strings.Builder
	for i := range 400 {
		fmt.Fprintf(&msgs, `{"role":"user","content":"step %d: %s"},`, i, strings.Repeat("text ", 100))
	}
	body := []byte(`{"max_tokens":1024,"messages":[` + strings.TrimSuffix(msgs.String(), ",") + `],"model":"claude-sonnet-4-5",` +
		`"system":"` + strings.Repeat("You drive a browser. ", 400) + `"}`)
	if _, sure := TrailingModel(body); sure {
		t.Fatalf("the body's end names its model: the scan is not what is measured")
	}
	var model string
	_, n := allocated(func() { model = Model(body) })
	if model != "claude-sonnet-4-5" {
		t.Fatalf("Model = %q", model)
	}
	if n > 4096 {
		t.Errorf("Model allocated %d bytes for a body of %d", n, len(body))
	}
	body[bytes.Index(body, []byte("claude"))] = 'X' // the gateway reuses the body's buffer
	if model != "claude-sonnet-4-5" {
		t.Errorf("the model read changed with the body's buffer: %q", model)
	}
}
