package config_test

import (
	"bytes"
	"errors"
	"flag"
	"io"
	"maps"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/focusgate/focusgate"
	"github.com/focusgate/focusgate/config"
)

func getenv(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func TestLoadDefaults(t *testing.T) {
	cfg, err := config.Load(getenv(nil))
	if err != nil {
		t.Fatal(err)
	}
	want := config.Config{
		Addr:                 ":8080",
		UpstreamTimeout:      10 * time.Minute,
		RetrieverAPI:         "openai",
		RetrieverTimeout:     20 * time.Second,
		RetrieverMaxCalls:    16,
		RetrieverConcurrency: 64,
		MaxAnswerTokens:      4096,
		RetrieverHistory:     true,
		Mode:                 "remove",
		Prompt:               "line",
		MinTokens:            1000,
		CacheTTL:             24 * time.Hour,
		CacheMaxBytes:        64 << 20,
		PageMemoBytes:        64 << 20,
		RedisTimeout:         50 * time.Millisecond,
		MaxBodyBytes:         32 << 20,
		InspectBudget:        64 << 20,
		ExpectedReduction:    0.5,
		SkipUneconomic:       true,
		HoldoutIdle:          10 * time.Minute,
		HoldoutMaxOpen:       100000,
		UI:                   true,
		UIMaxRequests:        1000,
		UIMaxBytes:           32 << 20,
		ShutdownDelay:        5 * time.Second,
		ShutdownTimeout:      30 * time.Second,
		LogFormat:            "text",
		LogLevel:             "info",
	}
	providers := cfg.Providers
	cfg.Providers = nil
	if !reflect.DeepEqual(cfg, want) {
		t.Errorf("defaults:\n got %+v\nwant %+v", cfg, want)
	}
	for name, v := range map[string]string{
		"UPSTREAM_URL": "https://api.openai.com/v1", "RETRIEVER_MODEL": "gpt-4.1-mini",
		"ANTHROPIC_URL": "https://api.anthropic.com", "ANTHROPIC_RETRIEVER_MODEL": "claude-haiku-4-5",
		"GEMINI_URL": "https://generativelanguage.googleapis.com", "GEMINI_RETRIEVER_MODEL": "gemini-2.5-flash-lite",
		"BEDROCK_URL": "https://bedrock-runtime.{region}.amazonaws.com", "BEDROCK_RETRIEVER_MODEL": "us.anthropic.claude-haiku-4-5-20251001-v1:0", // no region: the US profile
		"VERTEX_URL": "https://{location}-aiplatform.googleapis.com", "VERTEX_RETRIEVER_MODEL": "claude-haiku-4-5@20251001",
		"AZURE_URL": "", "AZURE_RETRIEVER_DEPLOYMENT": "gpt-4.1-mini", "UPSTREAM_API_KEY": "",
	} {
		if got, ok := providers[name]; !ok || got != v {
			t.Errorf("FOCUSGATE_%s defaults to %q (set: %v), want %q", name, got, ok, v)
		}
	}
	cfg.Providers = providers
	if err := cfg.Validate(); err != nil {
		t.Errorf("defaults do not validate: %v", err)
	}
	if got := cfg.RetrieverFor(&focusgate.OpenAIProvider, focusgate.APIChat).URL; got != "https://api.openai.com/v1" {
		t.Errorf("retriever URL defaults to %q, want the upstream's", got)
	}
}

// Bedrock's region comes from the environment the AWS SDKs read.
func TestBedrockRegion(t *testing.T) {
	for env, want := range map[[2]string]string{
		{"us-west-2", ""}:           "https://bedrock-runtime.us-west-2.amazonaws.com",
		{"", "eu-central-1"}:        "https://bedrock-runtime.eu-central-1.amazonaws.com",
		{"ap-south-1", "us-east-1"}: "https://bedrock-runtime.ap-south-1.amazonaws.com",
		{"", ""}:                    "https://bedrock-runtime.{region}.amazonaws.com",
		{"evil.com/x", ""}:          "https://bedrock-runtime.{region}.amazonaws.com",
	} {
		cfg, err := config.Load(getenv(map[string]string{"AWS_REGION": env[0], "AWS_DEFAULT_REGION": env[1]}))
		if err != nil {
			t.Fatal(err)
		}
		if got := cfg.Upstream(&focusgate.BedrockProvider).URL; got != want {
			t.Errorf("AWS_REGION=%q AWS_DEFAULT_REGION=%q: %q, want %q", env[0], env[1], got, want)
		}
	}
}

// Bedrock's default retriever is Claude Haiku 4.5's inference profile for
// the geography of the region its calls are made from: a profile refuses
// calls from another geography's regions. An operator's own model is kept.
func TestBedrockRetrieverGeography(t *testing.T) {
	for _, tc := range []struct{ region, configured, want string }{
		{"us-east-1", "", "us.anthropic.claude-haiku-4-5-20251001-v1:0"},
		{"us-gov-west-1", "", "us-gov.anthropic.claude-haiku-4-5-20251001-v1:0"},
		{"eu-west-1", "", "eu.anthropic.claude-haiku-4-5-20251001-v1:0"},
		{"eu-central-2", "", "eu.anthropic.claude-haiku-4-5-20251001-v1:0"},
		{"ap-northeast-1", "", "global.anthropic.claude-haiku-4-5-20251001-v1:0"},
		{"sa-east-1", "", "global.anthropic.claude-haiku-4-5-20251001-v1:0"},
		{"", "", "us.anthropic.claude-haiku-4-5-20251001-v1:0"},
		{"evil.com/x", "", "us.anthropic.claude-haiku-4-5-20251001-v1:0"},
		{"eu-west-1", "anthropic.claude-3-5-haiku-20241022-v1:0", "anthropic.claude-3-5-haiku-20241022-v1:0"},
		{"eu-west-1", "arn:aws:bedrock:eu-west-1:123456789012:application-inference-profile/abc", "arn:aws:bedrock:eu-west-1:123456789012:application-inference-profile/abc"},
	} {
		cfg, err := config.Load(getenv(map[string]string{"AWS_REGION": tc.region, "FOCUSGATE_BEDROCK_RETRIEVER_MODEL": tc.configured}))
		if err != nil {
			t.Fatal(err)
		}
		if got := cfg.RetrieverFor(&focusgate.BedrockProvider, focusgate.APIMessages).Model; got != tc.want {
			t.Errorf("AWS_REGION=%q FOCUSGATE_BEDROCK_RETRIEVER_MODEL=%q: the retriever is %q, want %q", tc.region, tc.configured, got, tc.want)
		}
	}
}

func TestLoadEnvironment(t *testing.T) {
	cfg, err := config.Load(getenv(map[string]string{
		"FOCUSGATE_ADDR":              "127.0.0.1:9000",
		"FOCUSGATE_UPSTREAM_URL":      "http://localhost:11434/v1",
		"FOCUSGATE_UPSTREAM_API_KEY":  "sk-up",
		"FOCUSGATE_RETRIEVER_TIMEOUT": "1500ms",
		"FOCUSGATE_MODE":              "stubs",
		"FOCUSGATE_MIN_TOKENS":        "0",
		"FOCUSGATE_PRUNE_ALL":         "true",
		"FOCUSGATE_MAX_BODY_BYTES":    "1024",
	}))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Addr != "127.0.0.1:9000" || cfg.Value(focusgate.OpenAIProvider.URL) != "http://localhost:11434/v1" ||
		cfg.RetrieverTimeout != 1500*time.Millisecond || cfg.Mode != "stubs" || cfg.MinTokens != 0 ||
		!cfg.PruneAll || cfg.MaxBodyBytes != 1024 {
		t.Errorf("environment not applied: %+v", cfg)
	}
	if got := cfg.RetrieverFor(&focusgate.OpenAIProvider, focusgate.APIChat).Key; got != "sk-up" {
		t.Errorf("retriever key falls back to %q, want the upstream key", got)
	}
}

func TestLoadReportsEveryBadValueByVariable(t *testing.T) {
	_, err := config.Load(getenv(map[string]string{
		"FOCUSGATE_RETRIEVER_TIMEOUT": "soon",
		"FOCUSGATE_MIN_TOKENS":        "many",
		"FOCUSGATE_PRUNE_ALL":         "perhaps",
	}))
	if err == nil {
		t.Fatal("bad values accepted")
	}
	for _, name := range []string{"FOCUSGATE_RETRIEVER_TIMEOUT", "FOCUSGATE_MIN_TOKENS", "FOCUSGATE_PRUNE_ALL"} {
		if !strings.Contains(err.Error(), name) {
			t.Errorf("error does not name %s: %v", name, err)
		}
	}
}

func TestValidate(t *testing.T) {
	valid, err := config.Load(getenv(nil))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		change func(*config.Config)
		want   []string // every variable the error must name
	}{
		{"relative upstream", func(c *config.Config) { c.Set(focusgate.OpenAIProvider.URL, "/v1") }, []string{"FOCUSGATE_UPSTREAM_URL"}},
		{"Vertex URL without a host", func(c *config.Config) { c.Set(focusgate.VertexProvider.URL, "https:///{location}") }, []string{"FOCUSGATE_VERTEX_URL"}},
		{"bad Azure deployments", func(c *config.Config) { c.Set(focusgate.AzureProvider.Models, "prod") }, []string{"FOCUSGATE_AZURE_DEPLOYMENTS"}},
		{"empty Bedrock retriever", func(c *config.Config) { c.Set(focusgate.BedrockProvider.Retrievers[0].Model, " ") }, []string{"FOCUSGATE_BEDROCK_RETRIEVER_MODEL"}},
		{"ftp retriever", func(c *config.Config) { c.RetrieverURL = "ftp://host/v1" }, []string{"FOCUSGATE_RETRIEVER_URL"}},
		{"unknown mode", func(c *config.Config) { c.Mode = "shrink" }, []string{"FOCUSGATE_MODE"}},
		{"unknown prompt", func(c *config.Config) { c.Prompt = "gentle" }, []string{"FOCUSGATE_PROMPT"}},
		{"zero timeout", func(c *config.Config) { c.RetrieverTimeout = 0 }, []string{"FOCUSGATE_RETRIEVER_TIMEOUT"}},
		{"no output-token cap", func(c *config.Config) { c.MaxAnswerTokens = 0 }, []string{"FOCUSGATE_RETRIEVER_MAX_TOKENS"}},
		{"bad address", func(c *config.Config) { c.Addr = "8080" }, []string{"FOCUSGATE_ADDR"}},
		{"bad redis scheme", func(c *config.Config) { c.RedisURL = "http://localhost:6379" }, []string{"FOCUSGATE_REDIS_URL"}},
		{"zero body cap", func(c *config.Config) { c.MaxBodyBytes = 0 }, []string{"FOCUSGATE_MAX_BODY_BYTES"}},
		{"bad log format", func(c *config.Config) { c.LogFormat = "xml" }, []string{"FOCUSGATE_LOG_FORMAT"}},
		{"reduction above one", func(c *config.Config) { c.ExpectedReduction = 1.5 }, []string{"FOCUSGATE_EXPECTED_REDUCTION"}},
		{"holdout above one", func(c *config.Config) { c.Holdout = 1.05 }, []string{"FOCUSGATE_HOLDOUT"}},
		{"negative holdout", func(c *config.Config) { c.Holdout = -0.05 }, []string{"FOCUSGATE_HOLDOUT"}},
		{"holdout idle zero", func(c *config.Config) { c.HoldoutIdle = 0 }, []string{"FOCUSGATE_HOLDOUT_IDLE"}},
		{"no open conversations", func(c *config.Config) { c.HoldoutMaxOpen = 0 }, []string{"FOCUSGATE_HOLDOUT_MAX_OPEN"}},
		{"zero inspect budget", func(c *config.Config) { c.InspectBudget = 0 }, []string{"FOCUSGATE_INSPECT_BUDGET_BYTES"}},
		{"zero redis timeout", func(c *config.Config) { c.RedisTimeout = 0 }, []string{"FOCUSGATE_REDIS_TIMEOUT"}},
		{"drain delay past the grace period", func(c *config.Config) { c.ShutdownDelay = c.ShutdownTimeout }, []string{"FOCUSGATE_SHUTDOWN_DELAY"}},
		{
			"every problem at once",
			func(c *config.Config) {
				c.Set(focusgate.OpenAIProvider.URL, "nope")
				c.Mode = "x"
				c.CacheTTL = -time.Second
				c.MinTokens = -1
			},
			[]string{"FOCUSGATE_UPSTREAM_URL", "FOCUSGATE_MODE", "FOCUSGATE_CACHE_TTL", "FOCUSGATE_MIN_TOKENS"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := valid
			cfg.Providers = maps.Clone(valid.Providers)
			tt.change(&cfg)
			err := cfg.Validate()
			if err == nil {
				t.Fatal("invalid configuration accepted")
			}
			for _, name := range tt.want {
				if !strings.Contains(err.Error(), name) {
					t.Errorf("error does not name %s: %v", name, err)
				}
			}
		})
	}
}

func TestValidateNeverEchoesRedisPassword(t *testing.T) {
	cfg, _ := config.Load(getenv(nil))
	cfg.RedisURL = "http://user:hunter2@host:6379"
	err := cfg.Validate()
	if err == nil || strings.Contains(err.Error(), "hunter2") {
		t.Errorf("error %v: want a rejection without the password", err)
	}
}

func TestFlagsOverrideEnvironment(t *testing.T) {
	cfg, err := config.Load(getenv(map[string]string{"FOCUSGATE_MODE": "stubs", "FOCUSGATE_ADDR": ":1"}))
	if err != nil {
		t.Fatal(err)
	}
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	cfg.RegisterFlags(fs, "serve")
	if err := fs.Parse([]string{"--mode", "ancestors", "--retriever-timeout=3s", "--prune-all", "--cache-max-bytes", "10", "--expected-reduction", "0.3"}); err != nil {
		t.Fatal(err)
	}
	if cfg.Mode != "ancestors" || cfg.RetrieverTimeout != 3*time.Second || !cfg.PruneAll || cfg.CacheMaxBytes != 10 || cfg.ExpectedReduction != 0.3 {
		t.Errorf("flags not applied: %+v", cfg)
	}
	if cfg.Addr != ":1" {
		t.Errorf("a setting without a flag lost its environment value: %q", cfg.Addr)
	}
	if err := fs.Parse([]string{"--retriever-timeout", "later"}); err == nil {
		t.Error("bad duration flag accepted")
	}
}

func TestHelpListsEverySetting(t *testing.T) {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	var cfg config.Config
	cfg.RegisterFlags(fs, "serve")
	var buf bytes.Buffer
	config.PrintSettings(&buf, fs, "serve")
	for _, s := range config.Settings() {
		if !strings.Contains(buf.String(), "--"+s.Flag+", "+s.Env) {
			t.Errorf("help does not list --%s / %s:\n%s", s.Flag, s.Env, buf.String())
		}
		if s.Default != "" && !strings.Contains(buf.String(), `"`+s.Default+`"`) {
			t.Errorf("help does not give %s's default %q", s.Env, s.Default)
		}
	}
}

// The README's configuration table is what users read; it must not drift
// from the settings the binary actually has.
func TestREADMEDocumentsEverySetting(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range config.Settings() {
		row := "| `" + s.Env + "` |"
		if !strings.Contains(string(readme), row) {
			t.Errorf("README has no table row for %s", s.Env)
			continue
		}
		if s.Default != "" && !strings.Contains(string(readme), row+" `"+s.Default+"` |") {
			t.Errorf("README does not give %s's default as `%s`", s.Env, s.Default)
		}
	}
}

// Modes and prompt variants are read the same way from the environment, from
// flags and (by the pipeline) from request headers: case and surrounding
// space do not matter, and an unknown name is refused with the variable's
// name.
func TestModesAndPromptsReadLikeHeaders(t *testing.T) {
	cfg, err := config.Load(getenv(map[string]string{"FOCUSGATE_MODE": "Remove", "FOCUSGATE_PROMPT": " DEFENDER "}))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Mode != focusgate.ModeRemove || cfg.Prompt != focusgate.VariantDefender {
		t.Errorf("mode %q, prompt %q: want remove and defender", cfg.Mode, cfg.Prompt)
	}
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	cfg.RegisterFlags(fs, "serve")
	if err := fs.Parse([]string{"--mode", "AnCeStOrS", "--prompt", "Neutral"}); err != nil {
		t.Fatal(err)
	}
	if cfg.Mode != focusgate.ModeAncestors || cfg.Prompt != focusgate.VariantNeutral {
		t.Errorf("after flags: mode %q, prompt %q: want ancestors and neutral", cfg.Mode, cfg.Prompt)
	}
	if err := fs.Parse([]string{"--mode", "shrink"}); err == nil {
		t.Error("unknown mode flag accepted")
	}
	_, err = config.Load(getenv(map[string]string{"FOCUSGATE_MODE": "shrink"}))
	if err == nil || !strings.Contains(err.Error(), "FOCUSGATE_MODE") {
		t.Errorf("unknown mode: error %v, want one naming FOCUSGATE_MODE", err)
	}
}

// The retriever of each provider and API, as the README's configuration
// table says.
func TestRetrieverFor(t *testing.T) {
	base := func(env map[string]string) config.Config {
		cfg, err := config.Load(getenv(env))
		if err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	openai, anthropic, gemini := &focusgate.OpenAIProvider, &focusgate.AnthropicProvider, &focusgate.GeminiProvider
	bedrock, vertex, azure := &focusgate.BedrockProvider, &focusgate.VertexProvider, &focusgate.AzureProvider
	tests := []struct {
		name     string
		env      map[string]string
		provider *focusgate.Provider
		api      focusgate.API
		want     config.Retriever // Spec is the provider's retriever for the API it names
		on       *focusgate.Provider
	}{
		{"chat, defaults", nil, openai, focusgate.APIChat,
			config.Retriever{URL: "https://api.openai.com/v1", Model: "gpt-4.1-mini", ClientKey: true}, openai},
		{"messages, only an Anthropic key", map[string]string{"FOCUSGATE_ANTHROPIC_API_KEY": "sk-ant"}, anthropic, focusgate.APIMessages,
			config.Retriever{URL: "https://api.anthropic.com", Model: "claude-haiku-4-5", Key: "sk-ant", ClientKey: true}, anthropic},
		{"messages, the client's own credential", nil, anthropic, focusgate.APIMessages,
			config.Retriever{URL: "https://api.anthropic.com", Model: "claude-haiku-4-5", ClientKey: true}, anthropic},
		{"messages through an OpenAI retriever URL", map[string]string{"FOCUSGATE_RETRIEVER_URL": "http://r/v1", "FOCUSGATE_UPSTREAM_API_KEY": "sk-up"}, anthropic, focusgate.APIMessages,
			config.Retriever{URL: "http://r/v1", Model: "gpt-4.1-mini", Key: "sk-up"}, openai},
		{"chat through an Anthropic retriever URL", map[string]string{"FOCUSGATE_RETRIEVER_URL": "http://claude", "FOCUSGATE_RETRIEVER_API": "anthropic", "FOCUSGATE_RETRIEVER_MODEL": "claude-haiku-4-5", "FOCUSGATE_ANTHROPIC_API_KEY": "sk-ant"}, openai, focusgate.APIChat,
			config.Retriever{URL: "http://claude", Model: "claude-haiku-4-5", Key: "sk-ant"}, anthropic},
		{"the retriever's own key at its URL", map[string]string{"FOCUSGATE_RETRIEVER_URL": "http://claude", "FOCUSGATE_RETRIEVER_API": "anthropic", "FOCUSGATE_RETRIEVER_API_KEY": "sk-r", "FOCUSGATE_ANTHROPIC_API_KEY": "sk-ant"}, anthropic, focusgate.APIMessages,
			config.Retriever{URL: "http://claude", Model: "gpt-4.1-mini", Key: "sk-r", ClientKey: true}, anthropic},
		{"gemini, defaults: the client's own Gemini key", nil, gemini, focusgate.APIGemini,
			config.Retriever{URL: "https://generativelanguage.googleapis.com", Model: "gemini-2.5-flash-lite", ClientKey: true}, gemini},
		{"gemini, only a Gemini key", map[string]string{"FOCUSGATE_GEMINI_API_KEY": "AIza-up", "FOCUSGATE_GEMINI_RETRIEVER_MODEL": "gemini-2.5-flash"}, gemini, focusgate.APIGemini,
			config.Retriever{URL: "https://generativelanguage.googleapis.com", Model: "gemini-2.5-flash", Key: "AIza-up", ClientKey: true}, gemini},
		{"chat through a Gemini retriever URL", map[string]string{"FOCUSGATE_RETRIEVER_URL": "http://gemini", "FOCUSGATE_RETRIEVER_API": "gemini", "FOCUSGATE_RETRIEVER_MODEL": "gemini-2.5-flash-lite", "FOCUSGATE_GEMINI_API_KEY": "AIza-up"}, openai, focusgate.APIResponses,
			config.Retriever{URL: "http://gemini", Model: "gemini-2.5-flash-lite", Key: "AIza-up"}, gemini},
		{"bedrock invoke: Claude on Bedrock", map[string]string{"AWS_REGION": "us-east-1"}, bedrock, focusgate.APIMessages,
			config.Retriever{URL: "https://bedrock-runtime.us-east-1.amazonaws.com", Model: "us.anthropic.claude-haiku-4-5-20251001-v1:0", ClientKey: true}, bedrock},
		{"bedrock converse: Claude on Bedrock through invoke", map[string]string{"AWS_REGION": "us-east-1", "FOCUSGATE_BEDROCK_API_KEY": "bedrock-key"}, bedrock, focusgate.APIConverse,
			config.Retriever{URL: "https://bedrock-runtime.us-east-1.amazonaws.com", Model: "us.anthropic.claude-haiku-4-5-20251001-v1:0", Key: "bedrock-key", ClientKey: true}, bedrock},
		{"vertex messages: Claude on Vertex AI", nil, vertex, focusgate.APIMessages,
			config.Retriever{URL: "https://{location}-aiplatform.googleapis.com", Model: "claude-haiku-4-5@20251001", ClientKey: true}, vertex},
		{"vertex gemini: the Gemini retriever model on Vertex AI", map[string]string{"FOCUSGATE_GEMINI_RETRIEVER_MODEL": "gemini-2.5-flash"}, vertex, focusgate.APIGemini,
			config.Retriever{URL: "https://{location}-aiplatform.googleapis.com", Model: "gemini-2.5-flash", ClientKey: true}, vertex},
		{"azure: a deployment on the same resource", map[string]string{"FOCUSGATE_AZURE_URL": "https://acme.openai.azure.com", "FOCUSGATE_AZURE_API_KEY": "az"}, azure, focusgate.APIResponses,
			config.Retriever{URL: "https://acme.openai.azure.com", Model: "gpt-4.1-mini", Key: "az", ClientKey: true}, azure},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := tt.want
			want.Provider, want.Spec = tt.on, tt.on.RetrieverFor(tt.api)
			got := base(tt.env).RetrieverFor(tt.provider, tt.api)
			// A setting's Expand is a func, which DeepEqual never finds
			// equal, even to itself.
			got.Spec.Model.Expand, want.Spec.Model.Expand = nil, nil
			if !reflect.DeepEqual(got, want) {
				t.Errorf("got %+v\nwant %+v", got, want)
			}
		})
	}
	cfg := base(map[string]string{"FOCUSGATE_RETRIEVER_API": "cohere"})
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "FOCUSGATE_RETRIEVER_API") {
		t.Errorf("an unknown retriever API: %v", err)
	}
}

// A client's credential goes only to a retriever of the provider the client
// speaks to: for every route of every provider, and every provider a
// retriever URL may be said to speak, with no key configured, the client's
// credential may serve exactly when the two are the same provider. The same
// API served by two providers (Azure's chat and OpenAI's, Bedrock's
// Messages and Anthropic's) makes no difference.
func TestClientCredentialsNeverCrossProviders(t *testing.T) {
	for _, client := range focusgate.Providers {
		for _, rt := range client.Routes {
			t.Run(client.Name+" "+rt.Pattern, func(t *testing.T) {
				own := base(t, nil).RetrieverFor(client, rt.API)
				if own.Provider != client || own.Key != "" || !own.ClientKey {
					t.Errorf("own retriever %+v: want %s's, no key, the client's credential allowed", own, client.Name)
				}
				for _, p := range focusgate.Providers {
					r := base(t, map[string]string{"FOCUSGATE_RETRIEVER_URL": "http://retriever", "FOCUSGATE_RETRIEVER_API": p.Name}).RetrieverFor(client, rt.API)
					if r.Provider != p || r.Key != "" || r.ClientKey != (p == client) {
						t.Errorf("retriever at a URL speaking %s: %+v; want no key, client credential allowed: %v", p.Name, r, p == client)
					}
				}
			})
		}
	}
}

func base(t *testing.T, env map[string]string) config.Config {
	t.Helper()
	cfg, err := config.Load(getenv(env))
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// Each provider's settings are the variables its declaration names, with
// the defaults it declares, and Upstream reads them.
func TestSettingsFollowTheDeclarations(t *testing.T) {
	defaults := map[string]string{}
	for _, s := range config.Settings() {
		defaults[s.Env] = s.Default
	}
	for _, p := range focusgate.Providers {
		env := map[string]string{}
		for _, set := range p.Settings() {
			got, ok := defaults[config.Prefix+set.Name]
			if !ok || got != set.Default {
				t.Errorf("%s: %s%s defaults to %q (declared: %v), want %q", p.Name, config.Prefix, set.Name, got, ok, set.Default)
			}
			env[config.Prefix+set.Name] = "http://" + p.Name
		}
		if p.Key.Name != "" {
			env[config.Prefix+p.Key.Name] = "key-" + p.Name
		}
		if p.Models.Name != "" {
			env[config.Prefix+p.Models.Name] = "d=m"
		}
		cfg := base(t, env)
		want := config.Upstream{URL: "http://" + p.Name}
		if p.Key.Name != "" {
			want.Key = "key-" + p.Name
		}
		if got := cfg.Upstream(p); got.URL != want.URL || got.Key != want.Key || (p.Models.Name != "" && got.Models["d"] != "m") {
			t.Errorf("%s: Upstream %+v, want %+v", p.Name, got, want)
		}
	}
}

// The command-line tools take a provider's key from the user's own variable
// only where the configuration has none, and each provider's from its own.
func TestWithUserKeys(t *testing.T) {
	cfg := base(t, map[string]string{"FOCUSGATE_ANTHROPIC_API_KEY": "sk-ant-configured"})
	user := getenv(map[string]string{"OPENAI_API_KEY": "sk-user", "ANTHROPIC_API_KEY": "sk-ant-user", "GEMINI_API_KEY": "AIza-user", "AZURE_OPENAI_API_KEY": "az-user"})
	got := cfg.WithUserKeys(user)
	key := func(c config.Config, p *focusgate.Provider) string { return c.Upstream(p).Key }
	if key(got, &focusgate.OpenAIProvider) != "sk-user" || key(got, &focusgate.AnthropicProvider) != "sk-ant-configured" ||
		key(got, &focusgate.GeminiProvider) != "AIza-user" || key(got, &focusgate.AzureProvider) != "az-user" {
		t.Errorf("keys: want the user's where none is configured: %+v", got.Providers)
	}
	if key(cfg, &focusgate.OpenAIProvider) != "" {
		t.Error("WithUserKeys changed the configuration it was called on")
	}
}

// A value that does not parse is reported once, by its variable, in words:
// not again as out of bounds, and not in a parser's terms.
func TestABadValueIsReportedOnceInWords(t *testing.T) {
	cfg, err := config.Load(getenv(map[string]string{
		"FOCUSGATE_RETRIEVER_TIMEOUT":  "5parsecs",
		"FOCUSGATE_HOLDOUT_IDLE":       "later",
		"FOCUSGATE_EXPECTED_REDUCTION": "half",
		"FOCUSGATE_MIN_TOKENS":         "1e3",
		"FOCUSGATE_PRUNE_ALL":          "yes please",
	}))
	all := errors.Join(err, cfg.Validate()).Error()
	for name, want := range map[string]string{
		"FOCUSGATE_RETRIEVER_TIMEOUT":  `"5parsecs" is not a duration`,
		"FOCUSGATE_HOLDOUT_IDLE":       `"later" is not a duration`,
		"FOCUSGATE_EXPECTED_REDUCTION": `"half" is not a number`,
		"FOCUSGATE_MIN_TOKENS":         `"1e3" is not a whole number`,
		"FOCUSGATE_PRUNE_ALL":          `"yes please" is not true or false`,
	} {
		if n := strings.Count(all, name); n != 1 {
			t.Errorf("%s is named %d times, want once:\n%s", name, n, all)
		}
		if !strings.Contains(all, name+": "+want) {
			t.Errorf("%s: want %q:\n%s", name, want, all)
		}
	}
	for _, jargon := range []string{"strconv", "time:", "ParseFloat", "invalid syntax", "config:"} {
		if strings.Contains(all, jargon) {
			t.Errorf("the message speaks of %q:\n%s", jargon, all)
		}
	}
}

// A misspelt variable is warned about, with the setting it was likely
// meant for; a known one is not, and names far from any setting get no
// guess.
func TestUnknownVariablesAreWarnedAbout(t *testing.T) {
	got := config.UnknownVariables([]string{
		"FOCUSGATE_HOLDOUTT=0.1", "FOCUSGATE_MODE=stubs", "PATH=/bin", "FOCUSGATE_RETRIEVER_TIMOUT=5s", "FOCUSGATE_COLOUR_SCHEME=dark",
		"FOCUSGATE_BEDROCK_API_KYE=x",
	})
	want := []string{
		"FOCUSGATE_BEDROCK_API_KYE is not a setting of focusgate and is ignored (did you mean FOCUSGATE_BEDROCK_API_KEY?)",
		"FOCUSGATE_COLOUR_SCHEME is not a setting of focusgate and is ignored",
		"FOCUSGATE_HOLDOUTT is not a setting of focusgate and is ignored (did you mean FOCUSGATE_HOLDOUT?)",
		"FOCUSGATE_RETRIEVER_TIMOUT is not a setting of focusgate and is ignored (did you mean FOCUSGATE_RETRIEVER_TIMEOUT?)",
	}
	if !slices.Equal(got, want) {
		t.Errorf("warnings:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// Each command's help lists the settings it reads, with one format of
// default.
func TestHelpListsTheCommandsSettings(t *testing.T) {
	for cmd, absent := range map[string][]string{
		"serve": nil,
		"prune": {"--addr,", "--ui,", "--admin-key,", "--holdout,", "--shutdown-timeout,"},
		"eval":  {"--addr,", "--ui,", "--redis-url,", "--holdout,", "--client-keys-file,"},
	} {
		fs := flag.NewFlagSet(cmd, flag.ContinueOnError)
		var cfg config.Config
		cfg.RegisterFlags(fs, cmd)
		var buf bytes.Buffer
		config.PrintSettings(&buf, fs, cmd)
		help := buf.String()
		for _, a := range absent {
			if strings.Contains(help, a) {
				t.Errorf("%s --help lists %s, which it does not read", cmd, a)
			}
		}
		for _, s := range config.Settings() {
			if s.UsedBy(cmd) && !strings.Contains(help, "--"+s.Flag+", "+s.Env) {
				t.Errorf("%s --help lacks %s", cmd, s.Env)
			}
		}
		if strings.Contains(help, "(default: ") {
			t.Errorf("%s --help gives a default in another format", cmd)
		}
	}
}
