package proxy

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/gin-gonic/gin"
)

// accessLog writes one line per request once its response is complete (for a
// stream, when the stream ends or is aborted). It never logs bodies, query
// strings or headers: they carry prompts and API keys.
func (s *Server) accessLog(c *gin.Context) {
	start := time.Now()
	info := &requestInfo{}
	info.bytesIn.Store(c.Request.ContentLength)
	c.Request = c.Request.WithContext(context.WithValue(c.Request.Context(), requestInfoKey{}, info))
	defer func() {
		v := recover()
		elapsed := time.Since(start)
		if v == nil && c.Writer.Written() && c.Writer.Header().Get("Content-Length") != "" {
			// The answer is whole: send it now. The server would flush it only
			// once the handler returns, after the bookkeeping below, which
			// would then stand between the upstream's answer and the client.
			// (Without a Content-Length the server may still add one, which
			// flushing first would turn into chunked encoding.)
			c.Writer.Flush()
		}
		status := answered(c)
		if info.clientGone.Load() {
			status = statusClientClosed
		}
		attrs := []slog.Attr{
			slog.String("method", c.Request.Method),
			slog.String("path", c.Request.URL.Path),
			slog.Int("status", status),
			slog.Duration("duration", elapsed),
			slog.Int64("bytes_in", info.bytesIn.Load()),
			slog.Int("bytes_out", max(c.Writer.Size(), 0)),
		}
		attrs = append(attrs, slog.String("key", keyName(c.Request.Context())))
		if rt := info.match.Route; rt != nil {
			attrs = append(attrs, slog.String("api", rt.API.String()))
		}
		if st := c.Writer.Header().Get(HeaderStatus); st != "" {
			attrs = append(attrs, slog.String("focusgate", st))
		}
		if v != nil {
			// Only http.ErrAbortHandler gets here (recoverPanics handles the
			// rest): the client went away mid-response.
			attrs = append(attrs, slog.Bool("aborted", true))
		}
		level := slog.LevelInfo
		if s.opts.Dashboard != nil && strings.HasPrefix(c.Request.URL.Path, "/ui/") {
			// An open dashboard polls every two seconds.
			level = slog.LevelDebug
		}
		ctx, labels := c.Request.Context(), labelsOf(c)
		s.books.Do(func() {
			// Metrics first: a test or operator who has seen the log line
			// can rely on the request being counted.
			s.metrics.observeRequest(labels, elapsed.Seconds())
			s.log.LogAttrs(ctx, level, "request", attrs...)
		})
		if v != nil {
			panic(v)
		}
	}()
	c.Next()
}

// recoverPanics turns a handler panic into a 500 in OpenAI's shape and one
// log line. http.ErrAbortHandler is re-raised untouched: ReverseProxy uses it
// to abort a response whose client went away mid-stream, which is not a crash
// and which net/http handles silently.
func (s *Server) recoverPanics(c *gin.Context) {
	defer func() {
		v := recover()
		if v == nil {
			return
		}
		if err, ok := v.(error); ok && errors.Is(err, http.ErrAbortHandler) {
			panic(v)
		}
		s.log.ErrorContext(c.Request.Context(), "panic serving request", "path", c.Request.URL.Path, "panic", v)
		if !c.Writer.Written() {
			writeError(c.Writer, http.StatusInternalServerError, "focusgate: internal error", "server_error", "internal_error")
		}
		c.Abort()
	}()
	c.Next()
}
