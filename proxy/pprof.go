package proxy

import (
	"crypto/subtle"
	"net/http"
	"net/http/pprof"
	"strings"
)

// Profiler serves net/http/pprof's profiles (FOCUSGATE_PPROF_ADDR), so that
// an operator can profile a busy replica as any Go service is profiled.
// With adminKey set, every request must carry it as a bearer token; the
// configuration lets the profiler listen beyond loopback only then.
func Profiler(adminKey string) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	if adminKey == "" {
		return mux
	}
	want := []byte("Bearer " + adminKey)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got := []byte(strings.TrimSpace(r.Header.Get("Authorization")))
		if subtle.ConstantTimeCompare(got, want) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="focusgate-pprof"`)
			http.Error(w, "focusgate: the profiler needs the admin key (FOCUSGATE_ADMIN_KEY) as a bearer token", http.StatusUnauthorized)
			return
		}
		mux.ServeHTTP(w, r)
	})
}
