package ui

import (
	"crypto/sha256"
	"crypto/subtle"
	"embed"
	"encoding/hex"
	"encoding/json"
	"html"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/focusgate/focusgate"
)

//go:embed assets
var assets embed.FS

// Options configure a Dashboard.
type Options struct {
	// Holdout, when set, puts the comparison of the two arms on the
	// overview.
	Holdout focusgate.HoldoutReporter
	// Capture keeps the page text of recent requests (observations, goal,
	// history, the retriever's reasoning) for the detail view.
	Capture bool
	// MaxRequests and MaxBytes bound the ring of recent requests; the
	// oldest go first when either is reached.
	MaxRequests int
	MaxBytes    int64
	// AdminKey is required from any address but loopback; empty means the
	// dashboard answers loopback only.
	AdminKey string
	Logger   *slog.Logger
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Dashboard records recent requests and serves /ui. It is safe for
// concurrent use.
type Dashboard struct {
	opts    Options
	ring    *ring
	stats   *stats
	mux     *http.ServeMux
	session string // the cookie value that stands for the admin key
	logins  *loginLimiter
}

// New returns a Dashboard.
func New(opts Options) *Dashboard {
	if opts.MaxRequests <= 0 {
		opts.MaxRequests = 1000
	}
	if opts.MaxBytes <= 0 {
		opts.MaxBytes = 32 << 20
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	d := &Dashboard{opts: opts, ring: newRing(opts.MaxRequests, opts.MaxBytes), stats: newStats(opts.Now()), logins: newLoginLimiter()}
	if opts.AdminKey != "" {
		// The cookie holds a digest, not the key itself, so that a
		// browser's cookie store never holds the key.
		sum := sha256.Sum256([]byte("focusgate-ui-session\x00" + opts.AdminKey))
		d.session = hex.EncodeToString(sum[:])
	}
	static, _ := fs.Sub(assets, "assets")
	files := http.FileServerFS(static)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /ui", d.index)
	mux.HandleFunc("GET /ui/{$}", d.index)
	mux.Handle("GET /ui/static/", http.StripPrefix("/ui/static/", files))
	mux.HandleFunc("POST /ui/login", d.login)
	mux.HandleFunc("GET /ui/api/overview", d.overview)
	mux.HandleFunc("GET /ui/api/requests", d.requests)
	mux.HandleFunc("GET /ui/api/requests/{id}", d.request)
	mux.HandleFunc("/ui/", func(w http.ResponseWriter, r *http.Request) { http.NotFound(w, r) })
	d.mux = mux
	return d
}

// Record keeps what one request reported. It is called on the request's
// path, so it does no more than copy what it keeps and add up numbers.
func (d *Dashboard) Record(r Record) {
	if r.Time.IsZero() {
		r.Time = d.opts.Now()
	}
	d.stats.add(&r)
	d.ring.add(newEntry(r, d.opts.Capture))
}

// ServeHTTP serves /ui and /ui/api/... to those allowed to see them.
func (d *Dashboard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	// The login form and its stylesheet are public; they show no data.
	public := r.URL.Path == "/ui/login" || strings.HasPrefix(r.URL.Path, "/ui/static/")
	if !public && !d.allowed(r) {
		d.unauthorized(w, r, "")
		return
	}
	d.mux.ServeHTTP(w, r)
}

// allowed says whether r may see the dashboard: from loopback, unless a
// proxy on this host forwarded it; from elsewhere, with the admin key as a
// bearer token or the session cookie the login form sets.
func (d *Dashboard) allowed(r *http.Request) bool {
	if isLoopback(r) {
		return true
	}
	if d.opts.AdminKey == "" {
		return false
	}
	if token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
		return equal(token, d.opts.AdminKey)
	}
	if c, err := r.Cookie(sessionCookie); err == nil {
		return equal(c.Value, d.session)
	}
	return false
}

const sessionCookie = "focusgate_ui"

// isLoopback reports a request from this host that no proxy forwarded: a
// reverse proxy on the same host would otherwise make every visitor local.
func isLoopback(r *http.Request) bool {
	for _, h := range []string{"Forwarded", "X-Forwarded-For", "X-Real-Ip"} {
		if r.Header.Get(h) != "" {
			return false
		}
	}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func equal(a, b string) bool {
	return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1
}

// unauthorized answers 401: JSON for the API, the login form for a page.
func (d *Dashboard) unauthorized(w http.ResponseWriter, r *http.Request, problem string) {
	w.Header().Set("WWW-Authenticate", `Bearer realm="focusgate dashboard"`)
	if strings.HasPrefix(r.URL.Path, "/ui/api/") || r.Method != http.MethodGet && r.URL.Path != "/ui/login" {
		writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "the dashboard needs FOCUSGATE_ADMIN_KEY from this address"})
		return
	}
	if problem == "" && d.opts.AdminKey == "" {
		problem = "This gateway has no FOCUSGATE_ADMIN_KEY: its dashboard answers only on the machine it runs on."
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(http.StatusUnauthorized)
	page, _ := assets.ReadFile("assets/login.html")
	msg := ""
	if problem != "" {
		msg = `<p class="problem">` + html.EscapeString(problem) + `</p>`
	}
	_, _ = w.Write([]byte(strings.Replace(string(page), "<!--problem-->", msg, 1)))
}

// login checks the admin key posted by the login form and sets the session
// cookie.
func (d *Dashboard) login(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 4<<10)
	key := r.PostFormValue("key")
	if d.opts.AdminKey == "" {
		d.unauthorized(w, r, "")
		return
	}
	now := d.opts.Now()
	if ok, wait := d.logins.allow(r.RemoteAddr, now); !ok {
		w.Header().Set("Retry-After", strconv.Itoa(int(wait.Seconds())+1))
		writeJSON(w, http.StatusTooManyRequests, map[string]string{"error": "too many wrong admin keys from this address; try again later"})
		return
	}
	if !equal(key, d.opts.AdminKey) {
		d.logins.fail(r.RemoteAddr, now)
		d.opts.Logger.Warn("dashboard: sign-in refused", "remote", r.RemoteAddr)
		d.unauthorized(w, r, "That is not the admin key.")
		return
	}
	http.SetCookie(w, &http.Cookie{
		Name: sessionCookie, Value: d.session, Path: "/ui",
		HttpOnly: true, Secure: r.TLS != nil, SameSite: http.SameSiteStrictMode,
		MaxAge: int((12 * time.Hour).Seconds()),
	})
	http.Redirect(w, r, "/ui", http.StatusSeeOther)
}

func (d *Dashboard) index(w http.ResponseWriter, r *http.Request) {
	page, err := assets.ReadFile("assets/index.html")
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_, _ = w.Write(page)
}

func (d *Dashboard) overview(w http.ResponseWriter, r *http.Request) {
	o := d.stats.overview(d.opts.Now())
	o.Capture = d.opts.Capture
	o.Ring.Requests, o.Ring.Bytes = d.ring.usage()
	o.Ring.MaxRequests, o.Ring.MaxBytes = d.opts.MaxRequests, d.opts.MaxBytes
	if d.opts.Holdout != nil {
		r := d.opts.Holdout.Report()
		o.Holdout = &r
	}
	writeJSON(w, http.StatusOK, o)
}

// requests lists recent requests, newest first: ?status= keeps one status,
// ?limit= bounds the list (default 200).
func (d *Dashboard) requests(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	status := q.Get("status")
	limit := 200
	if v, err := strconv.Atoi(q.Get("limit")); err == nil && v > 0 {
		limit = min(v, d.opts.MaxRequests)
	}
	list := make([]RequestSummary, 0, min(limit, 64))
	d.ring.newest(func(e *entry) bool {
		if status == "" || string(e.rec.Status) == status {
			list = append(list, e.summary())
		}
		return len(list) < limit
	})
	writeJSON(w, http.StatusOK, map[string]any{"capture": d.opts.Capture, "requests": list})
}

func (d *Dashboard) request(w http.ResponseWriter, r *http.Request) {
	id, err := strconv.ParseUint(r.PathValue("id"), 10, 64)
	if err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "bad request id"})
		return
	}
	e, ok := d.ring.get(id)
	if !ok {
		writeJSON(w, http.StatusNotFound, map[string]string{"error": "no such request in memory (it may have been evicted)"})
		return
	}
	writeJSON(w, http.StatusOK, e.detail(d.opts.Capture))
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}
