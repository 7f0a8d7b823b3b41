package eval

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/focusgate/focusgate/detect"
)

// MaxLineBytes caps one JSONL record. The largest recorded tree is under
// 200 KB; the cap keeps a corrupt or hostile file from exhausting memory.
const MaxLineBytes = 32 << 20

// Trace is one recorded agent step: the page the agent saw, its goal and
// history, and the element it acted on.
type Trace struct {
	ID             string   `json:"id"`
	Benchmark      string   `json:"benchmark"`
	Task           string   `json:"task"`
	Step           int      `json:"step"`
	Goal           string   `json:"goal"`
	History        []Action `json:"history"`
	AXTree         string   `json:"axtree_txt"`
	Action         string   `json:"action"`
	TargetBID      string   `json:"target_bid"`
	EpisodeSuccess bool     `json:"episode_success"`
}

// Action is one earlier step of an episode.
type Action struct {
	Step   int    `json:"step"`
	Action string `json:"action"`
	Error  string `json:"error"`
}

// ReadTraces reads JSONL traces, gzip-compressed or plain (told apart by the
// gzip magic bytes, not by the file name), one step per line; blank lines
// are ignored. It stops after limit steps when limit is positive. A line
// that is not a usable step is an error naming its line number: a
// measurement over silently dropped steps would mislead.
func ReadTraces(r io.Reader, limit int) ([]Trace, error) {
	br := bufio.NewReader(r)
	if magic, _ := br.Peek(2); bytes.Equal(magic, []byte{0x1f, 0x8b}) {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("eval: reading gzip header: %w", err)
		}
		defer zr.Close()
		r = zr
	} else {
		r = br
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, MaxLineBytes)
	var traces []Trace
	n := 0
	for (limit <= 0 || len(traces) < limit) && sc.Scan() {
		n++
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var t Trace
		if err := json.Unmarshal(line, &t); err != nil {
			// A read error cuts the last line short: report the cause.
			if rerr := sc.Err(); rerr != nil {
				return nil, readError(n, rerr)
			}
			return nil, fmt.Errorf("eval: line %d: %w", n, err)
		}
		switch {
		case t.AXTree == "":
			return nil, fmt.Errorf("eval: line %d: no axtree_txt", n)
		case t.TargetBID == "":
			return nil, fmt.Errorf("eval: line %d: no target_bid", n)
		}
		if t.Benchmark == "" {
			t.Benchmark = "unknown"
		}
		traces = append(traces, t)
	}
	if err := sc.Err(); err != nil {
		return nil, readError(n+1, err)
	}
	return traces, nil
}

func readError(line int, err error) error {
	if errors.Is(err, bufio.ErrTooLong) {
		return fmt.Errorf("eval: line %d: longer than %d bytes: %w", line, MaxLineBytes, err)
	}
	return fmt.Errorf("eval: line %d: %w", line, err)
}

// historyText renders an episode's earlier actions the way an agent's prompt
// lists them, keeping the whole lines of the most recent detect.MaxHistoryBytes, as the
// gateway does.
func historyText(h []Action) string {
	var b strings.Builder
	for _, a := range h {
		fmt.Fprintf(&b, "step %d: %s\n", a.Step, a.Action)
		if a.Error != "" {
			fmt.Fprintf(&b, "  error: %s\n", a.Error)
		}
	}
	s := strings.TrimSuffix(b.String(), "\n")
	if len(s) > detect.MaxHistoryBytes {
		s = s[len(s)-detect.MaxHistoryBytes:]
		if _, rest, ok := strings.Cut(s, "\n"); ok {
			s = rest
		}
	}
	return s
}

// ReadTraceFile reads the steps of a JSONL file of traces, gzip-compressed or
// plain, up to limit steps (0: all). A file without a step is an error.
func ReadTraceFile(name string, limit int) ([]Trace, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	traces, err := ReadTraces(f, limit)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", name, err)
	}
	if len(traces) == 0 {
		return nil, fmt.Errorf("no steps in %s", name)
	}
	return traces, nil
}
