package detect

import (
	"bytes"
	"encoding/json"
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
		{"escaped name and value", `{"mod\u0065l":"gpt-4.1-\u006dini"}`, "gpt-4.1-mini"},
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
