package proxy

import (
	"net/url"
	"testing"
)

func TestUpstreamURL(t *testing.T) {
	tests := []struct{ base, in, want string }{
		{"https://api.openai.com/v1", "/v1/chat/completions", "https://api.openai.com/v1/chat/completions"},
		{"https://api.openai.com/v1", "/chat/completions", "https://api.openai.com/v1/chat/completions"},
		{"https://api.openai.com/v1/", "/v1/models", "https://api.openai.com/v1/models"},
		{"https://api.openai.com/v1", "/v1", "https://api.openai.com/v1"},
		{"https://api.openai.com/v1", "/v1beta/models", "https://api.openai.com/v1/v1beta/models"},
		{"https://api.openai.com", "/v1/models", "https://api.openai.com/v1/models"},
		{"https://openrouter.ai/api/v1", "/v1/models?x=1", "https://openrouter.ai/api/v1/models?x=1"},
		{"http://localhost:11434/v1", "/v1/files/file%2Fabc", "http://localhost:11434/v1/files/file%2Fabc"},
		{"http://gw/openai", "/v1/models", "http://gw/openai/v1/models"},
		{"relative", "/v1/models", "http://gw/v1/models"},
	}
	for _, tt := range tests {
		base, _ := url.Parse(tt.base)
		if tt.base == "relative" {
			base = &url.URL{Scheme: "http", Host: "gw", Path: "v1"}
		}
		in, _ := url.Parse(tt.in)
		if got := upstreamURL(base, in).String(); got != tt.want {
			t.Errorf("upstreamURL(%s, %s) = %s, want %s", tt.base, tt.in, got, tt.want)
		}
	}
}
