package pipeline_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/focusgate/focusgate"
	"github.com/focusgate/focusgate/bench/workload"
	"github.com/focusgate/focusgate/detect"
)

// observations are the pages the pipeline finds in body, oldest first, with
// where each sits in it: the Outcome's Pages, one for one.
func observations(t *testing.T, body []byte, api focusgate.API) []detect.Observation {
	t.Helper()
	var fresh *detect.Finder
	read, err := fresh.Read(body, api, detect.Options{All: true})
	if err != nil {
		t.Fatal(err)
	}
	return read.Observations
}

// stringify escapes s as JSON.stringify does, without the quotes.
func stringify(t testing.TB, s string) string {
	t.Helper()
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s); err != nil {
		t.Fatal(err)
	}
	return strings.TrimSuffix(b.String(), "\"\n")[1:]
}

// numberLines writes text as a file read, each line after its number.
func numberLines(text, format string) string {
	lines := strings.Split(text, "\n")
	for i, l := range lines {
		lines[i] = fmt.Sprintf(format, i+1) + l
	}
	return strings.Join(lines, "\n")
}

// jsToolLoop is toolLoop as a JavaScript client writes it: <, > and &
// unescaped.
func jsToolLoop(t testing.TB, steps ...[2]string) []byte {
	t.Helper()
	var msgs any
	if err := json.Unmarshal(workload.ToolLoop("gpt-4.1", steps...), &msgs); err != nil {
		t.Fatal(err)
	}
	var js bytes.Buffer
	enc := json.NewEncoder(&js)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(msgs); err != nil {
		t.Fatal(err)
	}
	return bytes.TrimSuffix(js.Bytes(), []byte("\n"))
}

// readGutter matches the line number of every file read: Claude Code's,
// cat -n, opencode's.
var readGutter = regexp.MustCompile(`^ *\d+(\t|→|: |\| )`)

// The wrappers of issue 27 around a real page, as each client sends it:
// the page is pruned, everything the client wrapped it in (envelopes,
// markers, notes, the JSON around an escaped page) leaves byte for byte as
// it came, and every line kept keeps its own number.
func TestWrappedPagesArePrunedAndPutBackExactly(t *testing.T) {
	page := strings.TrimRight(readPage(t, "bgym-pr301_web_apple_buy_ipad_pro.txt"), "\n")
	half := len(page) / 2
	for _, tt := range []struct {
		name    string
		content func() string
		// fixed are pieces of the output that must leave unchanged.
		fixed []string
		// trees is how many trees the output holds, each pruned: the two
		// sides of a cut, the copies of a page.
		trees int
	}{
		{
			name: "opencode's read of a saved output",
			content: func() string {
				return "<path>/root/.local/share/opencode/tool-output/tool_1</path>\n<type>file</type>\n<content>\n" +
					numberLines(page, "%d: ") + "\n\n(End of file - total 900 lines)\n</content>"
			},
			fixed: []string{"<path>/root/.local/share/opencode/tool-output/tool_1</path>\n<type>file</type>\n<content>\n1: ", "\n\n(End of file - total 900 lines)\n</content>"},
			trees: 1,
		},
		{
			name: "Cline's escaped MCP result, middle-cut",
			content: func() string {
				js := `[{"type":"text","text":"` + stringify(t, page) + `"}]`
				return js[:len(js)/2] + "\n\n...[truncated 24310 chars]...\n\n" + js[len(js)/2+2000:]
			},
			fixed: []string{`[{"type":"text","text":"`, "\n\n...[truncated 24310 chars]...\n\n", `"}]`},
			trees: 2,
		},
		{
			name: "Claude Code's saved multi-part result read back, then a reminder",
			content: func() string {
				file := "[\n  {\n    \"type\": \"text\",\n    \"text\": \"" + stringify(t, page) + "\"\n  }\n]"
				return numberLines(file, "%6d\t") + "\n\n<system-reminder>\n<total_tokens>981234 tokens left</total_tokens>\n</system-reminder>"
			},
			fixed: []string{"     1\t[\n     2\t  {\n     3\t    \"type\": \"text\",\n     4\t    \"text\": \"", "\"\n     5\t  }\n     6\t]\n\n<system-reminder>\n<total_tokens>981234 tokens left</total_tokens>\n</system-reminder>"},
			trees: 1,
		},
		{
			name: "a saved result that holds the page twice, read back",
			content: func() string {
				twice := stringify(t, page) + `\n\n` + stringify(t, page)
				return numberLines("[\n  {\n    \"type\": \"text\",\n    \"text\": \""+twice+"\"\n  }\n]", "%d\t")
			},
			fixed: []string{"1\t[\n2\t  {\n3\t    \"type\": \"text\",\n4\t    \"text\": \"", "\"\n5\t  }\n6\t]"},
			trees: 2,
		},
		{
			name: "Gemini CLI's omission",
			content: func() string {
				return page[:half] + "\n... [18230 characters omitted] ...\n" + page[half+3000:]
			},
			fixed: []string{"\n... [18230 characters omitted] ...\n"},
			trees: 2,
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			content := tt.content()
			p := newGoldenPipeline()
			body := jsToolLoop(t, [2]string{"read", content})
			got, out := p.Rewrite(context.Background(), focusgate.Request{API: focusgate.APIChat, Body: body})
			if out.Status != focusgate.StatusPruned || !json.Valid(got) {
				t.Fatalf("%s %s (valid JSON: %v): want the page pruned", out.Status, out.Reason, json.Valid(got))
			}
			pruned := 0
			for _, pg := range out.Pages {
				if pg.Status == focusgate.StatusPruned {
					pruned++
				}
			}
			if len(out.Pages) != tt.trees || pruned != tt.trees {
				t.Errorf("%d trees found, %d pruned; want %d, all pruned", len(out.Pages), pruned, tt.trees)
			}
			sent := gjson.GetBytes(got, "messages.3.content").String()
			if len(sent) >= len(content) {
				t.Errorf("the output was not made smaller: %d of %d bytes", len(sent), len(content))
			}
			for _, f := range tt.fixed {
				if !strings.Contains(sent, f) {
					t.Errorf("%q did not leave as it came", f)
				}
			}
			for _, line := range strings.Split(sent, "\n") {
				if readGutter.MatchString(line) && !strings.Contains(content, line) && !strings.Contains(line, "pruned") {
					t.Errorf("numbered line %q is not the read's", line)
				}
			}
			// Outside the pruned spans, the body is as the client sent it,
			// and each span is its page as pruned, in the client's wrappers:
			// escaped as often, each line after its number.
			obs := observations(t, body, focusgate.APIChat)
			if len(obs) != len(out.Pages) {
				t.Fatalf("%d pages reported, %d found", len(out.Pages), len(obs))
			}
			reps, err := replacements(body, got, obs)
			if err != nil {
				t.Fatal(err)
			}
			for i, pg := range out.Pages {
				text, err := decodeRaw(reps[i], obs[i].Nested+1)
				if err != nil {
					t.Fatalf("page %d: %v", i+1, err)
				}
				lines := strings.Split(text, "\n")
				for k, line := range lines {
					lines[k] = strings.TrimPrefix(line, readGutter.FindString(line))
				}
				if want := pg.Forwarded; strings.Join(lines, "\n") != want {
					t.Errorf("page %d goes out as %.200q, not as its pruned text %.200q", i+1, text, want)
				}
			}
			// The next request forwards this output as it went out now.
			next := jsToolLoop(t, [2]string{"read", content}, [2]string{"snapshot", readPage(t, "bgym-pr301_workarena_standard_laptop_form.txt")})
			got, _ = p.Rewrite(context.Background(), focusgate.Request{API: focusgate.APIChat, Body: next})
			if again := gjson.GetBytes(got, "messages.3.content").String(); again != sent {
				t.Errorf("the next request changed the output it had sent")
			}
		})
	}
}
