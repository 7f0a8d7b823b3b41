// Package config holds focusgate's settings: their names, defaults and
// meaning, how they are read from FOCUSGATE_* environment variables and
// command-line flags, and how they are checked. It is the only place a setting
// is declared; --help and the README table are derived from the struct tags.
package config

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/caarlos0/env/v11"

	"github.com/focusgate/focusgate"
)

// Prefix starts the name of every environment variable focusgate reads.
const Prefix = "FOCUSGATE_"

// Config is every setting of the gateway. The env tag names the variable
// (after Prefix), envDefault its default and help its one-line description;
// the flag of a field is its variable name in lower case with dashes.
type Config struct {
	Addr               string            `env:"ADDR" envDefault:":8080" help:"listen address"`
	UpstreamURL        string            `env:"UPSTREAM_URL" envDefault:"https://api.openai.com/v1" help:"base URL of the action model's API; request paths are joined onto it"`
	UpstreamAPIKey     string            `env:"UPSTREAM_API_KEY" help:"API key sent upstream: with client keys, in place of the client's gateway key; without, only when the client sends no Authorization"`
	ClientKeysFile     string            `env:"CLIENT_KEYS_FILE" help:"gateway keys, lines name:key or name:sha256:<hex>; when set, clients authenticate with one and the upstream key is used upstream (reloaded on SIGHUP and on change)"`
	AllowUnauth        bool              `env:"ALLOW_UNAUTHENTICATED" envDefault:"false" help:"allow an upstream key without client keys on a non-loopback address (otherwise start-up is refused)"`
	UpstreamTimeout    time.Duration     `env:"UPSTREAM_TIMEOUT" envDefault:"10m" help:"longest wait for the upstream's response headers (streams then run as long as they last)"`
	RetrieverURL       string            `env:"RETRIEVER_URL" help:"base URL of the retriever for every API, speaking FOCUSGATE_RETRIEVER_API (default: each request's own provider: the upstream URL, Claude at FOCUSGATE_ANTHROPIC_URL for Messages requests, Gemini at FOCUSGATE_GEMINI_URL for Gemini requests)"`
	RetrieverAPIKey    string            `env:"RETRIEVER_API_KEY" help:"retriever API key (default: the upstream key of the retriever's provider, else the client's own credential)"`
	RetrieverAPI       string            `env:"RETRIEVER_API" envDefault:"openai" help:"which API FOCUSGATE_RETRIEVER_URL speaks: openai (chat completions), anthropic (Messages) or gemini (generateContent)"`
	AnthropicURL       string            `env:"ANTHROPIC_URL" envDefault:"https://api.anthropic.com" help:"base URL of the Anthropic API, as ANTHROPIC_BASE_URL is given; the Messages routes and requests with an anthropic-version header go there"`
	AnthropicAPIKey    string            `env:"ANTHROPIC_API_KEY" help:"Anthropic API key sent upstream as x-api-key: with client keys, in place of the client's gateway key; without, only when the client sends no credential"`
	AnthropicRetriever string            `env:"ANTHROPIC_RETRIEVER_MODEL" envDefault:"claude-haiku-4-5" help:"retriever model for Anthropic requests when FOCUSGATE_RETRIEVER_URL is empty (called through the Messages API at FOCUSGATE_ANTHROPIC_URL)"`
	GeminiURL          string            `env:"GEMINI_URL" envDefault:"https://generativelanguage.googleapis.com" help:"base URL of the Gemini API, as GOOGLE_GEMINI_BASE_URL is given; .../models/{model}:generateContent, :streamGenerateContent and :countTokens (v1, v1beta, Vertex AI paths) and other Gemini requests go there"`
	GeminiAPIKey       string            `env:"GEMINI_API_KEY" help:"Gemini API key sent upstream as x-goog-api-key: with client keys, in place of the client's gateway key; without, only when the client sends no credential"`
	GeminiRetriever    string            `env:"GEMINI_RETRIEVER_MODEL" envDefault:"gemini-2.5-flash-lite" help:"retriever model for Gemini requests when FOCUSGATE_RETRIEVER_URL is empty (called through generateContent at FOCUSGATE_GEMINI_URL)"`
	RetrieverModel     string            `env:"RETRIEVER_MODEL" envDefault:"gpt-4.1-mini" help:"retriever model"`
	RetrieverTimeout   time.Duration     `env:"RETRIEVER_TIMEOUT" envDefault:"20s" help:"deadline for all of focusgate's work on one request (detection, counting, cache, retriever calls, waiting for another replica); past it the request goes out unpruned"`
	MaxAnswerTokens    int               `env:"RETRIEVER_MAX_TOKENS" envDefault:"4096" help:"cap on the retriever's output tokens per call, its reasoning included (sent as max_tokens, or max_completion_tokens to reasoning models)"`
	RetrieverHistory   bool              `env:"RETRIEVER_HISTORY" envDefault:"true" help:"send the agent's history of earlier steps to the retriever"`
	Mode               focusgate.Mode    `env:"MODE" envDefault:"remove" help:"post-processing: remove, ancestors, stubs or off"`
	Prompt             focusgate.Variant `env:"PROMPT" envDefault:"line" help:"retriever prompt variant: line, restrictive, neutral or defender"`
	MinTokens          int               `env:"MIN_TOKENS" envDefault:"1000" help:"observations with fewer tokens are left alone"`
	PruneAll           bool              `env:"PRUNE_ALL" envDefault:"false" help:"also ask the retriever about older observations that have no stored selection, instead of leaving them as they came"`
	BypassModels       string            `env:"BYPASS_MODELS" help:"comma-separated glob patterns of action models never pruned, e.g. o3*,gpt-5*"`
	RedisURL           string            `env:"REDIS_URL" help:"empty: in-process cache; redis://host:6379/0: Redis cache shared by every replica"`
	RedisCluster       bool              `env:"REDIS_CLUSTER" envDefault:"false" help:"FOCUSGATE_REDIS_URL names a Redis Cluster: seed nodes as redis://host:7000?addr=host:7001&addr=host:7002"`
	RedisTimeout       time.Duration     `env:"REDIS_TIMEOUT" envDefault:"50ms" help:"bound of each Redis call; a slower Redis is treated as down and skipped"`
	CacheTTL           time.Duration     `env:"CACHE_TTL" envDefault:"24h" help:"lifetime of a cached selection"`
	CacheMaxBytes      int64             `env:"CACHE_MAX_BYTES" envDefault:"67108864" help:"size bound of the in-process cache"`
	PageMemoBytes      int64             `env:"PAGE_MEMO_BYTES" envDefault:"67108864" help:"memory for what focusgate remembers of the pages it has seen (their decoded text, trees and token counts), so that a page sent again, as an older page of a conversation or in a cache hit, costs look-ups; 0 remembers nothing"`
	MaxBodyBytes       int64             `env:"MAX_BODY_BYTES" envDefault:"33554432" help:"largest accepted request body, after decompression"`
	InspectBudget      int64             `env:"INSPECT_BUDGET_BYTES" envDefault:"67108864" help:"request bytes inspected at once; a request that would exceed it is forwarded uninspected (skipped; reason=busy)"`
	Prices             string            `env:"PRICES" help:"model prices overriding the built-in table, as JSON: {\"model\": {\"input\": USD, \"output\": USD}} per million tokens"`
	PricesFile         string            `env:"PRICES_FILE" help:"a JSON file of model prices, same shape as FOCUSGATE_PRICES (applied first)"`
	ContextWindows     string            `env:"CONTEXT_WINDOWS" help:"context windows overriding the built-in table, as JSON: {\"model\": tokens}; a request estimated over its model's window has every page pruned before it is sent"`
	ContextWindowsFile string            `env:"CONTEXT_WINDOWS_FILE" help:"a JSON file of context windows, same shape as FOCUSGATE_CONTEXT_WINDOWS (applied first)"`
	ExpectedReduction  float64           `env:"EXPECTED_REDUCTION" envDefault:"0.5" help:"share of observation tokens pruning is expected to remove; decides whether a retriever/action model pair can pay"`
	SkipUneconomic     bool              `env:"SKIP_UNECONOMIC" envDefault:"true" help:"skip pruning when the retriever's price makes it cost more than it saves (not for the defender prompt)"`
	Holdout            float64           `env:"HOLDOUT" envDefault:"0" help:"share of conversations (0 to 1) sent whole from their first request to their last, for the per-arm comparison on the dashboard (X-Focusgate-Status: skipped, with no reason); they cost their full price"`
	HoldoutKey         string            `env:"HOLDOUT_KEY" help:"key of the hash that puts conversations in arms, the same on every replica (default: a built-in constant; set one to draw a new split)"`
	HoldoutIdle        time.Duration     `env:"HOLDOUT_IDLE" envDefault:"10m" help:"how long a conversation goes without a request before it counts as ended, for the holdout comparison"`
	HoldoutMaxOpen     int               `env:"HOLDOUT_MAX_OPEN" envDefault:"100000" help:"cap on conversations accounted for at once; past it the one quiet longest counts as ended"`
	UI                 bool              `env:"UI" envDefault:"true" help:"serve the dashboard at /ui (from loopback; elsewhere with FOCUSGATE_ADMIN_KEY)"`
	UICapture          bool              `env:"UI_CAPTURE" envDefault:"false" help:"keep the page text of recent requests in memory for the dashboard's detail view"`
	UIMaxRequests      int               `env:"UI_MAX_REQUESTS" envDefault:"1000" help:"how many recent requests the dashboard keeps in memory"`
	UIMaxBytes         int64             `env:"UI_MAX_BYTES" envDefault:"33554432" help:"memory bound of the dashboard's recent requests, page text included"`
	AdminKey           string            `env:"ADMIN_KEY" help:"key that opens the dashboard from addresses other than loopback (bearer token or sign-in form)"`
	ShutdownDelay      time.Duration     `env:"SHUTDOWN_DELAY" envDefault:"5s" help:"on SIGTERM, how long /readyz reports draining while new connections are still accepted (part of the shutdown timeout)"`
	ShutdownTimeout    time.Duration     `env:"SHUTDOWN_TIMEOUT" envDefault:"30s" help:"on SIGTERM, how long in-flight requests and open streams may take to finish, counted from the signal"`
	LogFormat          string            `env:"LOG_FORMAT" envDefault:"text" help:"log format: text or json"`
	LogLevel           string            `env:"LOG_LEVEL" envDefault:"info" help:"log level: debug, info, warn or error"`
}

// Load reads the configuration from the environment through getenv, so that
// tests can inject one. Variables that are unset take their defaults. Every
// value that cannot be parsed is reported, each with its variable's name.
func Load(getenv func(string) string) (Config, error) {
	var cfg Config
	opts := env.Options{Prefix: Prefix, Environment: map[string]string{}}
	params, err := env.GetFieldParamsWithOptions(&cfg, opts)
	if err != nil {
		return cfg, fmt.Errorf("config: %w", err)
	}
	varByField := make(map[string]string, len(params))
	for i, f := range fields() {
		key := params[i].Key
		varByField[f.Name] = key
		if v := getenv(key); v != "" {
			opts.Environment[key] = v
		}
	}
	if err := env.ParseWithOptions(&cfg, opts); err != nil {
		return cfg, renameParseErrors(err, varByField)
	}
	return cfg, nil
}

// renameParseErrors rewrites the parser's errors, which name struct fields,
// so that they name the environment variable the user actually set.
func renameParseErrors(err error, varByField map[string]string) error {
	var agg env.AggregateError
	if !errors.As(err, &agg) {
		return fmt.Errorf("config: %w", err)
	}
	var errs []error
	for _, e := range agg.Errors {
		var pe env.ParseError
		if errors.As(e, &pe) {
			errs = append(errs, fmt.Errorf("%s: %w", varByField[pe.Name], pe.Err))
			continue
		}
		errs = append(errs, e)
	}
	return errors.Join(errs...)
}

// Validate reports every problem of the configuration at once, each naming
// its environment variable, so that a user fixes them in one go.
func (c Config) Validate() error {
	var errs []error
	bad := func(name, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s%s: %s", Prefix, name, fmt.Sprintf(format, args...)))
	}
	if _, _, err := net.SplitHostPort(c.Addr); err != nil {
		bad("ADDR", "%q is not host:port: %v", c.Addr, err)
	}
	if err := c.checkOpenRelay(); err != nil {
		errs = append(errs, err)
	}
	for _, p := range focusgate.Providers {
		u := c.Upstream(p)
		if err := checkHTTPURL(u.URL); err != nil {
			bad(p.Settings.URL, "%v", err)
		}
		if strings.TrimSpace(u.RetrieverModel) == "" {
			bad(p.Settings.RetrieverModel, "must not be empty")
		}
	}
	if focusgate.ProviderNamed(c.RetrieverAPI) == nil {
		bad("RETRIEVER_API", "unknown API %q (want %s)", c.RetrieverAPI, strings.Join(focusgate.ProviderNames(), ", "))
	}
	if c.RetrieverURL != "" {
		if err := checkHTTPURL(c.RetrieverURL); err != nil {
			bad("RETRIEVER_URL", "%v", err)
		}
	}
	for name, d := range map[string]time.Duration{
		"UPSTREAM_TIMEOUT":  c.UpstreamTimeout,
		"RETRIEVER_TIMEOUT": c.RetrieverTimeout,
		"CACHE_TTL":         c.CacheTTL,
		"REDIS_TIMEOUT":     c.RedisTimeout,
		"SHUTDOWN_TIMEOUT":  c.ShutdownTimeout,
	} {
		if d <= 0 {
			bad(name, "must be a positive duration, got %s", d)
		}
	}
	// Load reads both through focusgate.ParseMode and ParseVariant; a
	// Config built in code is checked the same way.
	if _, err := focusgate.ParseMode(string(c.Mode)); err != nil {
		bad("MODE", "%v", err)
	}
	if _, err := focusgate.ParseVariant(string(c.Prompt)); err != nil {
		bad("PROMPT", "%v", err)
	}
	for _, p := range c.BypassPatterns() {
		if _, err := path.Match(p, ""); err != nil {
			bad("BYPASS_MODELS", "pattern %q: %v", p, err)
		}
	}
	if c.MaxAnswerTokens <= 0 {
		bad("RETRIEVER_MAX_TOKENS", "must be positive, got %d", c.MaxAnswerTokens)
	}
	if c.MinTokens < 0 {
		bad("MIN_TOKENS", "must not be negative, got %d", c.MinTokens)
	}
	if c.RedisCluster && c.RedisURL == "" {
		bad("REDIS_CLUSTER", "needs %sREDIS_URL, the cluster's seed nodes", Prefix)
	}
	if c.RedisCluster && strings.HasPrefix(c.RedisURL, "unix:") {
		bad("REDIS_URL", "a Redis Cluster is reached over TCP: redis:// or rediss://")
	}
	if c.RedisURL != "" {
		if err := checkRedisURL(c.RedisURL); err != nil {
			bad("REDIS_URL", "%v", err)
		}
	}
	if c.CacheMaxBytes <= 0 {
		bad("CACHE_MAX_BYTES", "must be positive, got %d", c.CacheMaxBytes)
	}
	if c.PageMemoBytes < 0 {
		bad("PAGE_MEMO_BYTES", "must not be negative, got %d", c.PageMemoBytes)
	}
	if c.ExpectedReduction <= 0 || c.ExpectedReduction > 1 {
		bad("EXPECTED_REDUCTION", "must be in (0, 1], got %v", c.ExpectedReduction)
	}
	if c.Holdout < 0 || c.Holdout > 1 {
		bad("HOLDOUT", "must be a share from 0 to 1, got %v", c.Holdout)
	}
	if c.HoldoutIdle <= 0 {
		bad("HOLDOUT_IDLE", "must be a positive duration, got %s", c.HoldoutIdle)
	}
	if c.HoldoutMaxOpen <= 0 {
		bad("HOLDOUT_MAX_OPEN", "must be positive, got %d", c.HoldoutMaxOpen)
	}
	if c.MaxBodyBytes <= 0 {
		bad("MAX_BODY_BYTES", "must be positive, got %d", c.MaxBodyBytes)
	}
	if c.InspectBudget <= 0 {
		bad("INSPECT_BUDGET_BYTES", "must be positive, got %d", c.InspectBudget)
	}
	if c.ShutdownDelay < 0 || (c.ShutdownTimeout > 0 && c.ShutdownDelay >= c.ShutdownTimeout) {
		bad("SHUTDOWN_DELAY", "must be at least 0 and less than %sSHUTDOWN_TIMEOUT (%s), got %s", Prefix, c.ShutdownTimeout, c.ShutdownDelay)
	}
	if c.UIMaxRequests <= 0 {
		bad("UI_MAX_REQUESTS", "must be positive, got %d", c.UIMaxRequests)
	}
	if c.UIMaxBytes <= 0 {
		bad("UI_MAX_BYTES", "must be positive, got %d", c.UIMaxBytes)
	}
	if c.LogFormat != "text" && c.LogFormat != "json" {
		bad("LOG_FORMAT", "unknown format %q (want text or json)", c.LogFormat)
	}
	if !slices.Contains([]string{"debug", "info", "warn", "error"}, c.LogLevel) {
		bad("LOG_LEVEL", "unknown level %q (want debug, info, warn or error)", c.LogLevel)
	}
	// Sort for a stable message: the durations come from a map.
	slices.SortFunc(errs, func(a, b error) int { return strings.Compare(a.Error(), b.Error()) })
	return errors.Join(errs...)
}

// BypassPatterns are the patterns of FOCUSGATE_BYPASS_MODELS, trimmed, empty
// ones dropped.
func (c Config) BypassPatterns() []string {
	var pats []string
	for p := range strings.SplitSeq(c.BypassModels, ",") {
		if p = strings.TrimSpace(p); p != "" {
			pats = append(pats, p)
		}
	}
	return pats
}

// The APIs a retriever may speak (FOCUSGATE_RETRIEVER_API): every
// provider's name (focusgate.Providers).
const (
	RetrieverOpenAI    = "openai"
	RetrieverAnthropic = "anthropic"
	RetrieverGemini    = "gemini"
)

// Upstream is one provider's upstream settings.
type Upstream struct {
	URL, APIKey    string
	RetrieverModel string // its retriever when FOCUSGATE_RETRIEVER_URL is empty
}

// Upstream returns the settings of provider p, named in its declaration
// (focusgate.Provider.Settings); TestSettingsFollowTheDeclarations keeps
// the two in step.
func (c Config) Upstream(p *focusgate.Provider) Upstream {
	switch p.Name {
	case RetrieverAnthropic:
		return Upstream{c.AnthropicURL, c.AnthropicAPIKey, c.AnthropicRetriever}
	case RetrieverGemini:
		return Upstream{c.GeminiURL, c.GeminiAPIKey, c.GeminiRetriever}
	case RetrieverOpenAI:
		return Upstream{c.UpstreamURL, c.UpstreamAPIKey, c.RetrieverModel}
	}
	return Upstream{URL: p.Settings.DefaultURL, RetrieverModel: p.Settings.DefaultRetrieverModel}
}

// WithUserKeys returns c with each provider's upstream key, where none is
// configured, taken from the variable its SDKs read the user's key from
// (focusgate.Provider.ClientKeyEnv: OPENAI_API_KEY, ANTHROPIC_API_KEY,
// GEMINI_API_KEY). The command-line tools are their user's own client:
// each retriever is then called with the key of the provider it speaks, as
// RetrieverFor picks it, and never with another provider's.
func (c Config) WithUserKeys(getenv func(string) string) Config {
	for _, p := range focusgate.Providers {
		if c.Upstream(p).APIKey != "" || p.ClientKeyEnv == "" {
			continue
		}
		key := getenv(p.ClientKeyEnv)
		switch p.Name {
		case RetrieverAnthropic:
			c.AnthropicAPIKey = key
		case RetrieverGemini:
			c.GeminiAPIKey = key
		case RetrieverOpenAI:
			c.UpstreamAPIKey = key
		}
	}
	return c
}

// Retriever is the retriever that serves requests of one API.
type Retriever struct {
	API   string // the provider whose API it speaks: RetrieverOpenAI, RetrieverAnthropic, RetrieverGemini
	URL   string // the base URL of that API
	Model string
	// Key is the key it is called with; empty means each call uses the
	// client's own credential, which ClientKey allows.
	Key string
	// ClientKey says the client's own credential may serve when Key is
	// empty: the retriever speaks the API of the provider the client
	// speaks to. A client's credential never goes to another provider.
	ClientKey bool
}

// RetrieverFor says which retriever prunes the requests of api: with
// FOCUSGATE_RETRIEVER_URL set, that one for every API, speaking
// FOCUSGATE_RETRIEVER_API; without, the request's own provider at its
// upstream URL with its retriever model (the OpenAI upstream for chat and
// Responses requests, Claude for Messages requests, Gemini for Gemini
// requests), so that a team with only one provider's key gets pruning with
// no further setting. The key is the retriever's own, else the upstream key
// of the provider it speaks, else the client's credential when the client
// speaks that provider's API too.
func (c Config) RetrieverFor(api focusgate.API) Retriever {
	own := focusgate.ProviderOf(api)
	up := c.Upstream(own)
	r := Retriever{API: own.Name, URL: up.URL, Model: up.RetrieverModel}
	if c.RetrieverURL != "" {
		r.API, r.URL, r.Model = c.RetrieverAPI, c.RetrieverURL, c.RetrieverModel
	}
	r.Key = c.RetrieverAPIKey
	if p := focusgate.ProviderNamed(r.API); r.Key == "" && p != nil {
		r.Key = c.Upstream(p).APIKey
	}
	r.ClientKey = r.API == own.Name
	return r
}

// ErrOpenRelay is the start-up refusal of a gateway that would spend its
// upstream key on anyone's behalf.
var ErrOpenRelay = errors.New("open relay refused")

// checkOpenRelay refuses a configuration in which anyone who can reach the
// gateway spends an upstream key: an upstream key of any provider, no
// client keys, and an address reachable from other hosts.
func (c Config) checkOpenRelay() error {
	var set []string
	for _, p := range focusgate.Providers {
		if c.Upstream(p).APIKey != "" {
			set = append(set, Prefix+p.Settings.Key)
		}
	}
	if len(set) == 0 || c.ClientKeysFile != "" || c.AllowUnauth || LoopbackOnly(c.Addr) {
		return nil
	}
	return fmt.Errorf("%w: %s set, %sCLIENT_KEYS_FILE is not, and %sADDR %q accepts connections from other hosts, "+
		"so anyone who can reach the gateway would spend the upstream key. Fix: set %sCLIENT_KEYS_FILE to a file of name:key lines "+
		"and give each client its gateway key as its API key; or listen on loopback only (%sADDR=127.0.0.1:8080); "+
		"or, if an authenticating proxy stands in front, set %sALLOW_UNAUTHENTICATED=true",
		ErrOpenRelay, strings.Join(set, " and ")+map[bool]string{true: " is", false: " are"}[len(set) == 1], Prefix, Prefix, c.Addr, Prefix, Prefix, Prefix)
}

// LoopbackOnly reports whether a listen address accepts connections from
// this host only: localhost or a loopback IP. An empty host means every
// interface; any other host name may resolve to anything.
func LoopbackOnly(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func checkHTTPURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		// The parser's error quotes the URL, credentials included.
		return fmt.Errorf("%q is not a valid URL", RedactURL(raw))
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%q is not an absolute http(s) URL", RedactURL(raw))
	}
	return nil
}

func checkRedisURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		// The parser's error quotes the URL, password included: leave it out.
		return errors.New("not a valid URL")
	}
	switch u.Scheme {
	case "redis", "rediss":
		if u.Host == "" {
			return fmt.Errorf("%q has no host", RedactURL(raw))
		}
	case "unix":
	default:
		return fmt.Errorf("%q: scheme must be redis, rediss or unix", RedactURL(raw))
	}
	return nil
}

// RedactURL hides a URL's credentials, user name and password alike (either
// may be a key), whatever its scheme, before it reaches an error message or
// a log. A URL that does not parse is not shown at all.
func RedactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable URL)"
	}
	if u.User != nil {
		u.User = url.User("xxxxx")
		return u.String()
	}
	if strings.Contains(raw, "@") {
		// Credentials the parser did not recognise as such (a URL without
		// a scheme or host).
		return "(URL not shown: it may hold credentials)"
	}
	return u.String()
}
