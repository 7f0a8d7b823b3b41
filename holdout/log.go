package holdout

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"time"
)

// LogMessage is the message of the log line written for each conversation
// that ended; `focusgate eval --conversations` reads those lines back.
const LogMessage = "conversation"

// Log writes one line per conversation that ended: its arm, model, agent
// and counters, nothing of its content. A week of these lines, exported from
// the gateway's log, is what `focusgate eval --conversations` compares
// offline. It is a Sink.
type Log struct {
	Logger *slog.Logger
}

// End logs one conversation.
func (l Log) End(c Conversation) {
	l.Logger.LogAttrs(context.Background(), slog.LevelInfo, LogMessage,
		slog.String("arm", c.Arm.String()),
		slog.String("model", c.Model),
		slog.String("agent", c.Agent),
		slog.Int("steps", c.Steps),
		slog.Int("input_tokens", c.InputTokens),
		slog.Int("cache_read_tokens", c.CacheReadTokens),
		slog.Int("output_tokens", c.OutputTokens),
		slog.Int("estimated_steps", c.EstimatedSteps),
		slog.Int("repeat_steps", c.RepeatSteps),
		slog.Int("errors", c.Errors),
		slog.Float64("usd", c.USD),
		slog.Float64("retriever_usd", c.RetrieverUSD),
		slog.Bool("priced", c.Priced),
		slog.Float64("seconds", c.End.Sub(c.Start).Seconds()),
	)
}

// maxLogLine bounds one line of a log read back; longer lines are not the
// gateway's conversation lines and are skipped.
const maxLogLine = 1 << 20

// ReadLog reads the conversation lines of a gateway log, gzip-compressed or
// plain, in either of the gateway's formats (FOCUSGATE_LOG_FORMAT json or
// text), and hands each conversation to sink. Other lines are skipped. It
// returns how many conversations it read.
func ReadLog(r io.Reader, sink Sink) (int, error) {
	br := bufio.NewReader(r)
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return 0, fmt.Errorf("holdout: reading gzip header: %w", err)
		}
		defer zr.Close()
		br = bufio.NewReader(zr)
	}
	sc := bufio.NewScanner(br)
	sc.Buffer(make([]byte, 64<<10), maxLogLine)
	n, line := 0, 0
	for sc.Scan() {
		line++
		fields, ok := parseLine(sc.Bytes())
		if !ok || fields["msg"] != LogMessage {
			continue
		}
		c, err := fromFields(fields)
		if err != nil {
			return n, fmt.Errorf("holdout: line %d: %w", line, err)
		}
		sink.End(c)
		n++
	}
	if err := sc.Err(); err != nil {
		return n, fmt.Errorf("holdout: reading the log: %w", err)
	}
	return n, nil
}

// parseLine reads a JSON log line, or a text (logfmt) one as slog's text
// handler writes it, into its fields as strings.
func parseLine(b []byte) (map[string]string, bool) {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '{' {
		var raw map[string]any
		if json.Unmarshal(b, &raw) != nil {
			return nil, false
		}
		out := make(map[string]string, len(raw))
		for k, v := range raw {
			out[k] = fmt.Sprint(v)
		}
		return out, true
	}
	if !bytes.Contains(b, []byte("msg="+LogMessage)) {
		return nil, false
	}
	out := map[string]string{}
	for len(b) > 0 {
		eq := bytes.IndexByte(b, '=')
		if eq <= 0 {
			break
		}
		key := string(bytes.TrimSpace(b[:eq]))
		b = b[eq+1:]
		var val string
		if len(b) > 0 && b[0] == '"' {
			end := quotedEnd(b)
			s, err := strconv.Unquote(string(b[:end]))
			if err != nil {
				return nil, false
			}
			val, b = s, b[end:]
		} else {
			end := bytes.IndexByte(b, ' ')
			if end < 0 {
				end = len(b)
			}
			val, b = string(b[:end]), b[end:]
		}
		out[key] = val
		b = bytes.TrimLeft(b, " ")
	}
	return out, true
}

// quotedEnd is the length of the Go-quoted string at the start of b.
func quotedEnd(b []byte) int {
	for i := 1; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return len(b)
}

// fromFields is the conversation a log line describes.
func fromFields(f map[string]string) (Conversation, error) {
	var c Conversation
	var err error
	if c.Arm, err = parseArm(f["arm"]); err != nil {
		return c, err
	}
	c.Model, c.Agent = f["model"], f["agent"]
	for key, dst := range map[string]*int{
		"steps": &c.Steps, "input_tokens": &c.InputTokens, "cache_read_tokens": &c.CacheReadTokens,
		"output_tokens": &c.OutputTokens, "estimated_steps": &c.EstimatedSteps, "repeat_steps": &c.RepeatSteps, "errors": &c.Errors,
	} {
		v, err := strconv.ParseFloat(f[key], 64) // JSON numbers read as floats
		if err != nil {
			return c, fmt.Errorf("%s: %w", key, err)
		}
		*dst = int(v)
	}
	for key, dst := range map[string]*float64{"usd": &c.USD, "retriever_usd": &c.RetrieverUSD} {
		if *dst, err = strconv.ParseFloat(f[key], 64); err != nil {
			return c, fmt.Errorf("%s: %w", key, err)
		}
	}
	c.Priced = f["priced"] == "true"
	if s, err := strconv.ParseFloat(f["seconds"], 64); err == nil {
		c.End = c.Start.Add(time.Duration(s * float64(time.Second)))
	}
	return c, nil
}
