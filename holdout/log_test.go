package holdout

import (
	"bytes"
	"compress/gzip"
	"log/slog"
	"testing"
	"time"

	"github.com/focusgate/focusgate"
)

// The conversation lines of the gateway's log, in either format and
// compressed or not, read back as the conversations they were written from,
// among the log's other lines; so `focusgate eval --conversations` compares
// the same figures as the dashboard.
func TestLogRoundTrip(t *testing.T) {
	start := time.Unix(1700000000, 0)
	convs := []Conversation{
		{Arm: focusgate.ArmPruned, Model: "gpt-4.1", Agent: "claude-cli", Steps: 12, InputTokens: 1234567, CacheReadTokens: 1000000, OutputTokens: 800,
			EstimatedSteps: 1, RepeatSteps: 2, Errors: 1, USD: 2.5, RetrieverUSD: 0.1, Priced: true, Start: start, End: start.Add(90 * time.Second)},
		{Arm: focusgate.ArmHoldout, Model: "my model", Agent: `agent "x"`, Steps: 3, InputTokens: 30, Start: start, End: start},
	}
	for name, handler := range map[string]func(*bytes.Buffer) slog.Handler{
		"json": func(b *bytes.Buffer) slog.Handler { return slog.NewJSONHandler(b, nil) },
		"text": func(b *bytes.Buffer) slog.Handler { return slog.NewTextHandler(b, nil) },
	} {
		for _, zipped := range []bool{false, true} {
			var buf bytes.Buffer
			log := slog.New(handler(&buf))
			log.Info("request", "method", "POST", "steps", 99)
			for _, c := range convs {
				Log{Logger: log}.End(c)
			}
			log.Info("focusgate stopped")
			data := buf.Bytes()
			if zipped {
				var z bytes.Buffer
				zw := gzip.NewWriter(&z)
				zw.Write(data)
				zw.Close()
				data = z.Bytes()
			}
			s := &sink{}
			n, err := ReadLog(bytes.NewReader(data), s)
			if err != nil || n != len(convs) {
				t.Fatalf("%s (gzip %v): read %d, %v", name, zipped, n, err)
			}
			for i, got := range s.ended {
				want := convs[i]
				if d, w := got.End.Sub(got.Start), want.End.Sub(want.Start); d != w {
					t.Errorf("%s (gzip %v), line %d: lasted %v, want %v", name, zipped, i, d, w)
				}
				got.Start, got.End, want.Start, want.End = time.Time{}, time.Time{}, time.Time{}, time.Time{}
				if got != want {
					t.Errorf("%s (gzip %v), line %d:\n got %+v\nwant %+v", name, zipped, i, got, want)
				}
			}
		}
	}
}

// A conversation line that does not read is an error naming its line.
func TestLogBadLine(t *testing.T) {
	_, err := ReadLog(bytes.NewReader([]byte("{\"msg\":\"request\"}\n{\"msg\":\"conversation\",\"arm\":\"sideways\"}\n")), &sink{})
	if err == nil || !bytes.Contains([]byte(err.Error()), []byte("line 2")) {
		t.Errorf("error %v, want one naming line 2", err)
	}
}
