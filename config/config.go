// Package config holds focusgate's settings: their names, defaults and
// meaning, how they are read from FOCUSGATE_* environment variables and
// command-line flags, and how they are checked. It is the only place a setting
// is declared; --help and the README table are derived from the struct tags.
package config

import (
	"errors"
	"fmt"
	"maps"
	"net"
	"net/url"
	"path"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/caarlos0/env/v11"

	"github.com/focusgate/focusgate"
)

// Prefix starts the name of every environment variable focusgate reads.
const Prefix = "FOCUSGATE_"

// Config is every setting of the gateway. The env tag names the variable
// (after Prefix), envDefault its default and help its one-line description;
// the flag of a field is its variable name in lower case with dashes. The
// cmd tag names the commands besides serve that read it (prune, eval); the
// providers' settings are every command's.
type Config struct {
	Addr                 string            `env:"ADDR" envDefault:":8080" help:"listen address"`
	ClientKeysFile       string            `env:"CLIENT_KEYS_FILE" help:"gateway keys, lines name:key or name:sha256:<hex>; when set, clients authenticate with one and the upstream key is used upstream (reloaded on SIGHUP and on change)"`
	AllowUnauth          bool              `env:"ALLOW_UNAUTHENTICATED" envDefault:"false" help:"allow an upstream key without client keys on a non-loopback address (otherwise start-up is refused)"`
	UpstreamTimeout      time.Duration     `env:"UPSTREAM_TIMEOUT" envDefault:"10m" help:"longest wait for the upstream's response headers (streams then run as long as they last)"`
	RetrieverURL         string            `env:"RETRIEVER_URL" cmd:"prune eval" help:"base URL of one retriever for the requests of every provider, speaking the API of FOCUSGATE_RETRIEVER_API's provider with FOCUSGATE_RETRIEVER_MODEL; by default each request's own provider, with its retriever model"`
	RetrieverAPIKey      string            `env:"RETRIEVER_API_KEY" cmd:"prune eval" help:"key of the retriever at FOCUSGATE_RETRIEVER_URL; by default the key of FOCUSGATE_RETRIEVER_API's provider, else the client's own credential when the client speaks to that provider"`
	RetrieverAPI         string            `env:"RETRIEVER_API" cmd:"prune eval" envDefault:"openai" help:"the provider whose API FOCUSGATE_RETRIEVER_URL speaks: openai (chat completions), anthropic (Messages), gemini (generateContent), or a cloud (bedrock, vertex, azure), whose credentials it then gets"`
	RetrieverTimeout     time.Duration     `env:"RETRIEVER_TIMEOUT" cmd:"prune eval" envDefault:"20s" help:"deadline for all of focusgate's work on one request (detection, counting, cache, retriever calls, waiting for another replica); past it the request goes out unpruned"`
	MaxAnswerTokens      int               `env:"RETRIEVER_MAX_TOKENS" cmd:"prune eval" envDefault:"4096" help:"cap on the retriever's output tokens per call, its reasoning included (sent as max_tokens, or max_completion_tokens to reasoning models)"`
	RetrieverHistory     bool              `env:"RETRIEVER_HISTORY" cmd:"prune eval" envDefault:"true" help:"send the agent's history of earlier steps to the retriever"`
	RetrieverMaxCalls    int               `env:"RETRIEVER_MAX_CALLS" cmd:"prune" envDefault:"16" help:"retriever calls one request may make; pages past it go out whole (as stubs in a context-window rescue), skipped with reason retriever-limit"`
	RetrieverConcurrency int               `env:"RETRIEVER_CONCURRENCY" cmd:"prune" envDefault:"64" help:"retriever calls in flight at once across the gateway; a call waits for a place within its request's deadline"`
	Mode                 focusgate.Mode    `env:"MODE" cmd:"prune eval" envDefault:"remove" help:"post-processing: remove, ancestors, stubs or off"`
	Prompt               focusgate.Variant `env:"PROMPT" cmd:"prune eval" envDefault:"line" help:"retriever prompt variant: line, restrictive, neutral or defender"`
	MinTokens            int               `env:"MIN_TOKENS" cmd:"prune" envDefault:"1000" help:"observations with fewer tokens are left alone"`
	PruneAll             bool              `env:"PRUNE_ALL" cmd:"prune" envDefault:"false" help:"also ask the retriever about older observations that have no stored selection, instead of leaving them as they came"`
	BypassModels         string            `env:"BYPASS_MODELS" cmd:"prune" help:"comma-separated glob patterns of action models never pruned, e.g. o3*,gpt-5*"`
	RedisURL             string            `env:"REDIS_URL" cmd:"prune" help:"empty: in-process cache; redis://host:6379/0: Redis cache shared by every replica"`
	RedisCluster         bool              `env:"REDIS_CLUSTER" cmd:"prune" envDefault:"false" help:"FOCUSGATE_REDIS_URL names a Redis Cluster: seed nodes as redis://host:7000?addr=host:7001&addr=host:7002"`
	RedisTimeout         time.Duration     `env:"REDIS_TIMEOUT" cmd:"prune" envDefault:"50ms" help:"bound of each Redis call; a Redis whose calls keep timing out, or taking half of it, for a second is treated as down and skipped"`
	CacheTTL             time.Duration     `env:"CACHE_TTL" cmd:"prune" envDefault:"24h" help:"lifetime of a cached selection"`
	CacheMaxBytes        int64             `env:"CACHE_MAX_BYTES" cmd:"prune" envDefault:"67108864" help:"size bound of the in-process cache"`
	PageMemoBytes        int64             `env:"PAGE_MEMO_BYTES" cmd:"prune" envDefault:"67108864" help:"memory for what focusgate remembers of the pages it has seen (their decoded text, trees and token counts), so that a page sent again, as an older page of a conversation or in a cache hit, costs look-ups; 0 remembers nothing"`
	MaxBodyBytes         int64             `env:"MAX_BODY_BYTES" cmd:"prune" envDefault:"33554432" help:"largest accepted request body, after decompression"`
	InspectBudget        int64             `env:"INSPECT_BUDGET_BYTES" cmd:"prune" envDefault:"67108864" help:"request bytes inspected at once; a request that would exceed it is forwarded uninspected (skipped; reason=busy)"`
	Prices               string            `env:"PRICES" cmd:"prune eval" help:"model prices overriding the built-in table, as JSON: {\"model\": {\"input\": USD, \"output\": USD}} per million tokens"`
	PricesFile           string            `env:"PRICES_FILE" cmd:"prune eval" help:"a JSON file of model prices, same shape as FOCUSGATE_PRICES (applied first)"`
	ContextWindows       string            `env:"CONTEXT_WINDOWS" cmd:"prune" help:"context windows overriding the built-in table, as JSON: {\"model\": tokens}; a request estimated over its model's window has every page pruned before it is sent"`
	ContextWindowsFile   string            `env:"CONTEXT_WINDOWS_FILE" cmd:"prune" help:"a JSON file of context windows, same shape as FOCUSGATE_CONTEXT_WINDOWS (applied first)"`
	ExpectedReduction    float64           `env:"EXPECTED_REDUCTION" cmd:"prune" envDefault:"0.5" help:"share of observation tokens pruning is expected to remove; decides whether a retriever/action model pair can pay"`
	SkipUneconomic       bool              `env:"SKIP_UNECONOMIC" cmd:"prune" envDefault:"true" help:"skip pruning when the retriever's price makes it cost more than it saves (not for the defender prompt)"`
	Holdout              float64           `env:"HOLDOUT" envDefault:"0" help:"share of conversations (0 to 1) sent whole from their first request to their last, for the per-arm comparison on the dashboard (X-Focusgate-Status: skipped, with no reason); they cost their full price"`
	HoldoutKey           string            `env:"HOLDOUT_KEY" help:"key of the hash that puts conversations in arms, the same on every replica; by default a built-in constant; set one to draw a new split"`
	HoldoutIdle          time.Duration     `env:"HOLDOUT_IDLE" envDefault:"10m" help:"how long a conversation goes without a request before it counts as ended, for the holdout comparison"`
	HoldoutMaxOpen       int               `env:"HOLDOUT_MAX_OPEN" envDefault:"100000" help:"cap on conversations accounted for at once; past it the one quiet longest counts as ended"`
	UI                   bool              `env:"UI" envDefault:"true" help:"serve the dashboard at /ui (from loopback; elsewhere with FOCUSGATE_ADMIN_KEY)"`
	UICapture            bool              `env:"UI_CAPTURE" envDefault:"false" help:"keep the page text of recent requests in memory for the dashboard's detail view"`
	UIMaxRequests        int               `env:"UI_MAX_REQUESTS" envDefault:"1000" help:"how many recent requests the dashboard keeps in memory"`
	UIMaxBytes           int64             `env:"UI_MAX_BYTES" envDefault:"33554432" help:"memory bound of the dashboard's recent requests, page text included"`
	AdminKey             string            `env:"ADMIN_KEY" help:"key that opens the dashboard from addresses other than loopback (bearer token or sign-in form)"`
	ShutdownDelay        time.Duration     `env:"SHUTDOWN_DELAY" envDefault:"5s" help:"on SIGTERM, how long /readyz reports draining while new connections are still accepted (part of the shutdown timeout)"`
	ShutdownTimeout      time.Duration     `env:"SHUTDOWN_TIMEOUT" envDefault:"30s" help:"on SIGTERM, how long in-flight requests and open streams may take to finish, counted from the signal"`
	PprofAddr            string            `env:"PPROF_ADDR" help:"serve net/http/pprof's profiles at this address (empty: off); beyond loopback only with FOCUSGATE_ADMIN_KEY, which every request must then carry as a bearer token"`
	LogFormat            string            `env:"LOG_FORMAT" cmd:"prune eval" envDefault:"text" help:"log format: text or json"`
	LogLevel             string            `env:"LOG_LEVEL" cmd:"prune eval" envDefault:"info" help:"log level: debug, info, warn or error"`

	// Providers holds the settings the providers declare
	// (focusgate.Provider.Settings), by name after Prefix; Value reads
	// them. Load fills it; a setting it lacks has its declared default.
	Providers map[string]string

	// unparsed names the variables Load could not read, whose problem is
	// reported once, by Load, and not again by Validate.
	unparsed map[string]bool
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
	cfg.Providers = map[string]string{}
	for _, s := range ProviderSettings() {
		v := getenv(Prefix + s.Name)
		if v == "" {
			v = s.Default
		}
		if s.Expand != nil {
			v = s.Expand(v, getenv)
		}
		cfg.Providers[s.Name] = v
	}
	if err := env.ParseWithOptions(&cfg, opts); err != nil {
		var unparsed []string
		err = renameParseErrors(err, varByField, opts.Environment, &unparsed)
		cfg.unparsed = map[string]bool{}
		for _, name := range unparsed {
			cfg.unparsed[strings.TrimPrefix(name, Prefix)] = true
		}
		return cfg, err
	}
	return cfg, nil
}

// ProviderSettings lists the settings every provider declares, each once
// (providers may share one), in the order of focusgate.Providers.
func ProviderSettings() []focusgate.Setting {
	var out []focusgate.Setting
	seen := map[string]bool{}
	for _, p := range focusgate.Providers {
		for _, s := range p.Settings() {
			if !seen[s.Name] {
				seen[s.Name] = true
				out = append(out, s)
			}
		}
	}
	return out
}

// Value is the value of a provider's setting: as loaded, else its
// declared default.
func (c Config) Value(s focusgate.Setting) string {
	if v, ok := c.Providers[s.Name]; ok {
		return v
	}
	return s.Default
}

// Set gives a provider's setting a value, as a variable would.
func (c *Config) Set(s focusgate.Setting, value string) {
	if c.Providers == nil {
		c.Providers = map[string]string{}
	}
	c.Providers[s.Name] = value
}

// renameParseErrors rewrites the parser's errors, which name struct fields
// and speak of Go's parsers, so that each names the environment variable the
// user set and says what it wants in words (values are what environ holds);
// the variables are appended to unparsed.
func renameParseErrors(err error, varByField, environ map[string]string, unparsed *[]string) error {
	var agg env.AggregateError
	if !errors.As(err, &agg) {
		return fmt.Errorf("reading the settings: %w", err)
	}
	var errs []error
	for _, e := range agg.Errors {
		var pe env.ParseError
		if errors.As(e, &pe) {
			name := varByField[pe.Name]
			*unparsed = append(*unparsed, name)
			var ne *strconv.NumError
			if errors.As(pe.Err, &ne) || pe.Type == reflect.TypeFor[time.Duration]() {
				errs = append(errs, fmt.Errorf("%s: %w", name, wantKind(environ[name], pe.Type)))
				continue
			}
			errs = append(errs, fmt.Errorf("%s: %w", name, pe.Err))
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
		if c.unparsed[name] {
			return // Load said what is wrong with it
		}
		errs = append(errs, fmt.Errorf("%s%s: %s", Prefix, name, fmt.Sprintf(format, args...)))
	}
	if _, _, err := net.SplitHostPort(c.Addr); err != nil {
		bad("ADDR", "%q is not host:port: %v", c.Addr, err)
	}
	if err := c.checkOpenRelay(); err != nil {
		errs = append(errs, err)
	}
	for _, p := range focusgate.Providers {
		if u := c.Value(p.URL); u != "" || p.URL.Default != "" {
			if err := checkHTTPURL(templateless(u)); err != nil {
				bad(p.URL.Name, "%v", err)
			}
		}
		for _, r := range p.Retrievers {
			if strings.TrimSpace(c.Value(r.Model)) == "" {
				bad(r.Model.Name, "must not be empty")
			}
		}
		if p.Models.Name != "" {
			if _, err := parseModels(c.Value(p.Models)); err != nil {
				bad(p.Models.Name, "%v", err)
			}
		}
	}
	if focusgate.ProviderNamed(c.RetrieverAPI) == nil {
		bad("RETRIEVER_API", "unknown provider %q (want %s)", c.RetrieverAPI, strings.Join(focusgate.ProviderNames(), ", "))
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
	if c.RetrieverMaxCalls <= 0 {
		bad("RETRIEVER_MAX_CALLS", "must be positive, got %d", c.RetrieverMaxCalls)
	}
	if c.RetrieverConcurrency <= 0 {
		bad("RETRIEVER_CONCURRENCY", "must be positive, got %d", c.RetrieverConcurrency)
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
	if c.PprofAddr != "" {
		if _, _, err := net.SplitHostPort(c.PprofAddr); err != nil {
			bad("PPROF_ADDR", "%q is not host:port", c.PprofAddr)
		} else if c.AdminKey == "" && !LoopbackOnly(c.PprofAddr) {
			bad("PPROF_ADDR", "%q accepts connections from other hosts, and profiles show what the gateway holds: listen on loopback (127.0.0.1:6060), or set %sADMIN_KEY, which the profiler then requires", c.PprofAddr, Prefix)
		}
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

// Upstream is one provider's upstream settings.
type Upstream struct {
	URL string // may hold variables its provider's Resolve fills in per request
	// Key is the static key the gateway sends in the client's place; empty
	// for none.
	Key string
	// Models maps the names its routes give models to model names (Azure's
	// deployments).
	Models map[string]string
}

// Upstream returns the settings of provider p, named in its declaration.
func (c Config) Upstream(p *focusgate.Provider) Upstream {
	up := Upstream{URL: c.Value(p.URL)}
	if p.Key.Name != "" {
		up.Key = c.Value(p.Key)
	}
	if p.Models.Name != "" {
		up.Models, _ = parseModels(c.Value(p.Models)) // Validate reports an error
	}
	return up
}

// parseModels reads deployment=model pairs, comma-separated.
func parseModels(s string) (map[string]string, error) {
	var m map[string]string
	for pair := range strings.SplitSeq(s, ",") {
		if pair = strings.TrimSpace(pair); pair == "" {
			continue
		}
		name, model, ok := strings.Cut(pair, "=")
		name, model = strings.TrimSpace(name), strings.TrimSpace(model)
		if !ok || name == "" || model == "" {
			return nil, fmt.Errorf("%q is not name=model", pair)
		}
		if m == nil {
			m = map[string]string{}
		}
		m[name] = model
	}
	return m, nil
}

// templateless replaces the "{name}" variables of a URL template with a
// word, so that the rest of it can be checked as a URL.
func templateless(u string) string {
	var b strings.Builder
	for {
		i := strings.IndexByte(u, '{')
		j := strings.IndexByte(u, '}')
		if i < 0 || j < i {
			b.WriteString(u)
			return b.String()
		}
		b.WriteString(u[:i])
		b.WriteString("x")
		u = u[j+1:]
	}
}

// WithUserKeys returns c with each provider's upstream key, where none is
// configured, taken from the variable its SDKs read the user's key from
// (focusgate.Provider.ClientKeyEnv: OPENAI_API_KEY, ANTHROPIC_API_KEY,
// GEMINI_API_KEY, ...). The command-line tools are their user's own client:
// each retriever is then called with the key of the provider it speaks, as
// RetrieverFor picks it, and never with another provider's.
func (c Config) WithUserKeys(getenv func(string) string) Config {
	c.Providers = maps.Clone(c.Providers)
	for _, p := range focusgate.Providers {
		if p.Key.Name == "" || p.ClientKeyEnv == "" || c.Value(p.Key) != "" {
			continue
		}
		c.Set(p.Key, getenv(p.ClientKeyEnv))
	}
	return c
}

// Retriever is the retriever that prunes the requests of one API of one
// provider.
type Retriever struct {
	// Provider is the provider it is called on: its credentials sign the
	// calls, and its URL is where they go unless URL says otherwise.
	Provider *focusgate.Provider
	// Spec says what its calls speak and where they go on the provider.
	Spec focusgate.Retriever
	// URL is the base its calls' paths are joined onto; it may hold the
	// provider's variables.
	URL   string
	Model string
	// Key is the static key it is called with; empty means the provider's
	// cloud credentials when the gateway has them, else the client's own
	// credential, which ClientKey allows.
	Key string
	// ClientKey says the client's own credential may serve: the retriever
	// is called on the provider the client speaks to. A client's credential
	// never goes to another provider.
	ClientKey bool
}

// RetrieverFor says which retriever prunes the requests of api sent to
// provider p: with FOCUSGATE_RETRIEVER_URL set, that one for every request,
// speaking the API of FOCUSGATE_RETRIEVER_API's provider; without, p's own
// retriever for api, on p's upstream with p's credentials, so that a team
// with only one provider's credentials gets pruning with no further
// setting. The key is the retriever's own, else the upstream key of the
// provider it is called on.
func (c Config) RetrieverFor(p *focusgate.Provider, api focusgate.API) Retriever {
	on := p
	if c.RetrieverURL != "" {
		if named := focusgate.ProviderNamed(c.RetrieverAPI); named != nil {
			on = named
		}
	}
	spec := on.RetrieverFor(api)
	r := Retriever{Provider: on, Spec: spec, URL: c.Value(on.URL), Model: c.Value(spec.Model), Key: c.Upstream(on).Key}
	if c.RetrieverURL != "" {
		r.URL, r.Model = c.RetrieverURL, c.Value(focusgate.OpenAIProvider.RetrieverFor(focusgate.APIChat).Model)
		if c.RetrieverAPIKey != "" {
			r.Key = c.RetrieverAPIKey
		}
	}
	r.ClientKey = on == p
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
		if p.Key.Name != "" && c.Value(p.Key) != "" {
			set = append(set, Prefix+p.Key.Name)
		}
	}
	if len(set) == 0 || !c.Open() {
		return nil
	}
	return fmt.Errorf("%w: %s set, %sCLIENT_KEYS_FILE is not, and %sADDR %q accepts connections from other hosts, "+
		"so anyone who can reach the gateway would spend the upstream key. Fix: set %sCLIENT_KEYS_FILE to a file of name:key lines "+
		"and give each client its gateway key as its API key; or listen on loopback only (%sADDR=127.0.0.1:8080); "+
		"or, if an authenticating proxy stands in front, set %sALLOW_UNAUTHENTICATED=true",
		ErrOpenRelay, strings.Join(set, " and ")+map[bool]string{true: " is", false: " are"}[len(set) == 1], Prefix, Prefix, c.Addr, Prefix, Prefix, Prefix)
}

// Open says whether anyone who can reach the gateway could use it without a
// gateway key: no client keys, an address other hosts can reach, and no
// statement that an authenticating proxy stands in front. Such a gateway
// spends no credential of its own: a configured key refuses start-up
// (checkOpenRelay), and the cloud credentials of its environment are not
// used (see the README, "Clouds").
func (c Config) Open() bool {
	return c.ClientKeysFile == "" && !c.AllowUnauth && !LoopbackOnly(c.Addr)
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

// templateField is a field of a URL template, such as {region}.
var templateField = regexp.MustCompile(`\{[a-z]+\}`)

// RedactURL hides a URL's credentials, user name and password alike (either
// may be a key), whatever its scheme, before it reaches an error message or
// a log. A URL that does not parse is not shown at all, unless it is a
// template whose fields the gateway fills in per request (Bedrock's
// {region}, Vertex AI's {location}) with no user information.
func RedactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		if t, err := url.Parse(templateField.ReplaceAllString(raw, "x")); err == nil && t.User == nil && !strings.Contains(raw, "@") {
			return raw
		}
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
