package detect

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/tidwall/gjson"

	"github.com/focusgate/focusgate"
)

var update = flag.Bool("update", false, "rewrite golden files")

const (
	sharedAXTrees  = "../testdata/axtrees"
	sharedRequests = "../testdata/requests"
	sharedTraces   = "../testdata/traces/browsergym-dev.jsonl.gz"
	// genericAgentTemplate is a request built by AgentLab's own prompt code; the tests
	// put other trees, goals and histories into its layout.
	genericAgentTemplate = sharedRequests + "/genericagent_workarena_standard_laptop_step5_with_history.json"
)

func readFile(t testing.TB, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func mustJSON(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

func lastLine(s string) string {
	return s[strings.LastIndexByte(s, '\n')+1:]
}

type message struct {
	Role    string `json:"role"`
	Content any    `json:"content"`
	Name    string `json:"name,omitempty"`
}

type part struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

func chatBody(t testing.TB, msgs ...message) []byte {
	t.Helper()
	return mustJSON(t, map[string]any{"model": "gpt-4.1", "messages": msgs})
}

// genericAgentBody puts a goal, a tree, a focused-element statement and a history
// into the layout of the AgentLab template: the user message is a list of text
// parts, with "## Goal:\n" closing the first part and the goal alone in the second.
func genericAgentBody(t testing.TB, goal, tree, focus, history string) []byte {
	t.Helper()
	var req struct {
		Model    string `json:"model"`
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal([]byte(readFile(t, genericAgentTemplate)), &req); err != nil {
		t.Fatal(err)
	}
	var parts []part
	if err := json.Unmarshal(req.Messages[1].Content, &parts); err != nil {
		t.Fatal(err)
	}
	obs := parts[2].Text
	const (
		notesEnd  = "present, the element is not visible on the page.\n\n"
		focusHead = "\n\n## Focused element:\n"
		histHead  = "\n\n\n# History of interaction with the task:\n"
		histEnd   = "\n# Action space:"
	)
	i, j, k := strings.Index(obs, notesEnd), strings.Index(obs, focusHead), strings.Index(obs, histEnd)
	if i < 0 || j < 0 || k < 0 || !strings.Contains(obs, histHead) {
		t.Fatal("the GenericAgent template changed")
	}
	parts[1].Text = goal
	parts[2].Text = obs[:i+len(notesEnd)] + tree + focusHead + focus + histHead + history + obs[k:]
	var system string
	if err := json.Unmarshal(req.Messages[0].Content, &system); err != nil {
		t.Fatal(err)
	}
	return chatBody(t, message{Role: "system", Content: system}, message{Role: "user", Content: parts})
}

// webArenaBody follows WebArena's p_cot_id_actree_2s prompt: an introduction and two
// worked examples as system messages, then the current step.
func webArenaBody(t testing.TB, observation, url, objective, previous string) []byte {
	t.Helper()
	intro := "You are an autonomous intelligent agent tasked with navigating a web browser. You will be given web-based tasks. " +
		"These tasks will be accomplished through the use of specific actions you can issue.\n\n" +
		"Here's the information you'll have:\nThe user's objective: This is the task you're trying to complete.\n" +
		"The current web page's accessibility tree: This is a simplified representation of the webpage, providing key information.\n" +
		"The current web page's URL: This is the page you're currently navigating.\n" +
		"The open tabs: These are the tabs you have open.\nThe previous action: This is the action you just performed. It may be helpful to track your progress."
	example1 := "OBSERVATION:\n[1744] link 'HP CB782A#ABA 640 Inkjet Fax Machine (Renewed)'\n\t\t[1749] StaticText '$279.49'\n\t\t[1757] button 'Add to Cart'\n\t\t[1760] button 'Add to Wish List'\n\t\t[1761] button 'Add to Compare'\n" +
		"URL: http://onestopmarket.com/office-products/office-electronics.html\nOBJECTIVE: What is the price of HP Inkjet Fax Machine\nPREVIOUS ACTION: None"
	answer1 := "Let's think step-by-step. This page list the information of HP Inkjet Fax Machine, which is the product identified in the objective. Its price is $279.49. I think I have achieved the objective. I will issue the stop action with the answer. In summary, the next action I will perform is ```stop [$279.49]```"
	example2 := "OBSERVATION:\n[164] textbox 'Search' focused: True required: False\n[171] button 'Go'\n[174] link 'Find directions between two points'\n[212] heading 'Search Results'\n[216] button 'Close'\n" +
		"URL: http://openstreetmap.org\nOBJECTIVE: Show me the restaurants near CMU\nPREVIOUS ACTION: None"
	answer2 := "Let's think step-by-step. This page has a search box whose ID is [164]. According to the nominatim rule of openstreetmap, I can search for the restaurants near a location by \"restaurants near\". I can submit my typing by pressing the Enter afterwards. In summary, the next action I will perform is ```type [164] [restaurants near CMU] [1]```"
	current := "OBSERVATION:\n" + observation + "\nURL: " + url + "\nOBJECTIVE: " + objective + "\nPREVIOUS ACTION: " + previous
	return chatBody(t,
		message{Role: "system", Content: intro},
		message{Role: "system", Name: "example_user", Content: example1},
		message{Role: "system", Name: "example_assistant", Content: answer1},
		message{Role: "system", Name: "example_user", Content: example2},
		message{Role: "system", Name: "example_assistant", Content: answer2},
		message{Role: "user", Content: current},
	)
}

// agentOccamBody lays out one AgentOccam step: the objective and the previous action
// as labels, then the current observation.
func agentOccamBody(t testing.TB, objective, previous, tree string) []byte {
	t.Helper()
	instructions := "You are an AI assistant performing tasks on a web browser. You will be provided with task objective, current step, web page observations, previous plans, and interaction history. You need to issue an action for this step.\n\n" +
		"Generate the response in the following format:\nINTERACTION HISTORY SUMMARY:\nEmphasize all important details in the INTERACTION HISTORY section.\nOBSERVATION DESCRIPTION:\nDescribe information in the CURRENT OBSERVATION section.\nREASON:\nProvide your rationale for proposing the subsequent action commands here.\nACTION:\nSelect your action here."
	current := "OBJECTIVE: " + objective + "\nPREVIOUS ACTION: " + previous + "\nCURRENT OBSERVATION:\n" + tree + "\n"
	return chatBody(t, message{Role: "system", Content: instructions}, message{Role: "user", Content: current})
}

// trace is one recorded step of testdata/traces.
type trace struct {
	ID       string `json:"id"`
	Goal     string `json:"goal"`
	AXTree   string `json:"axtree_txt"`
	TargetID string `json:"target_bid"`
	History  []struct {
		Step   int    `json:"step"`
		Action string `json:"action"`
		Error  string `json:"error"`
	} `json:"history"`
}

func readTraces(t testing.TB) []trace {
	t.Helper()
	f, err := os.Open(sharedTraces)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	var traces []trace
	sc := bufio.NewScanner(zr)
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		var tr trace
		if err := json.Unmarshal(sc.Bytes(), &tr); err != nil {
			t.Fatal(err)
		}
		traces = append(traces, tr)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return traces
}

// genericAgentHistory renders a trace's history the way GenericAgent's History
// element does.
func genericAgentHistory(tr trace) string {
	var sb strings.Builder
	for i, h := range tr.History {
		fmt.Fprintf(&sb, "## step %d\n\n<action>\n%s\n</action>\n", i, h.Action)
		if h.Error != "" {
			fmt.Fprintf(&sb, "\n### Error from previous action:\n%s\n", h.Error)
		}
		sb.WriteString("\n")
	}
	return sb.String()
}

func requestFiles(t testing.TB) []string {
	t.Helper()
	var files []string
	for _, pattern := range []string{sharedRequests + "/*.json", "testdata/requests/*.json"} {
		m, err := filepath.Glob(pattern)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, m...)
	}
	if len(files) == 0 {
		t.Fatal("no request bodies")
	}
	return files
}

func apiOf(path string) focusgate.API {
	switch base := filepath.Base(path); {
	case strings.HasPrefix(base, "responses_"):
		return focusgate.APIResponses
	case strings.HasPrefix(base, "converse_"):
		return focusgate.APIConverse
	}
	return focusgate.APIChat
}

// splice replaces body[start:end] with text JSON-escaped nested+1 times, as the
// gateway does.
func splice(t testing.TB, body []byte, start, end int, text string, nested int) []byte {
	t.Helper()
	for range nested + 1 {
		lit, err := json.Marshal(text)
		if err != nil {
			t.Fatal(err)
		}
		text = string(lit[1 : len(lit)-1])
	}
	out := append([]byte(nil), body[:start]...)
	out = append(out, text...)
	return append(out, body[end:]...)
}

// checkRaw verifies an observation's raw span against the body: its lines
// are placed in it so that the tree goes back exactly (see checkWriteBack),
// decoding it Nested+1 times gives Text when the tree has no gutter, and
// splicing other text into it keeps the body valid JSON, and a nested
// string's JSON text valid JSON too (when it was: a cut one is not).
func checkRaw(t testing.TB, body []byte, o Observation) {
	t.Helper()
	if o.RawStart < 0 || o.RawStart > o.RawEnd || o.RawEnd > len(body) {
		t.Fatalf("raw span %d..%d outside a body of %d bytes", o.RawStart, o.RawEnd, len(body))
	}
	if o.RawStart != o.base+o.places[0].start || o.RawEnd != o.base+o.places[len(o.places)-1].end {
		t.Fatalf("raw span %d..%d, its lines from %d to %d", o.RawStart, o.RawEnd, o.base+o.places[0].start, o.base+o.places[len(o.places)-1].end)
	}
	checkWriteBack(t, body[o.base:], o.places, o.Nested+1, o.Text, o.Lines)
	text := string(body[o.RawStart:o.RawEnd])
	for range o.Nested + 1 {
		var dec string
		if err := json.Unmarshal([]byte(`"`+text+`"`), &dec); err != nil {
			t.Fatalf("raw span %d..%d does not decode: %v", o.RawStart, o.RawEnd, err)
		}
		text = dec
	}
	// encoding/json replaces invalid UTF-8 and lone surrogates, which Text
	// keeps; on valid text the two must agree.
	if unwrapped(o.places) && utf8.ValidString(o.Text) && text != o.Text {
		t.Fatalf("raw span decodes to %.80q..., Text is %.80q...", text, o.Text)
	}
	if !json.Valid(body) {
		return
	}
	out := splice(t, body, o.RawStart, o.RawEnd, "[1] link 'x\"y'\n\t\\ \u2028 \x01", o.Nested)
	if !json.Valid(out) {
		t.Fatalf("splicing into %d..%d breaks the JSON", o.RawStart, o.RawEnd)
	}
	if o.Nested > 0 && json.Valid([]byte(gjson.GetBytes(body, o.Path).String())) {
		holder := gjson.GetBytes(out, o.Path).String()
		if !json.Valid([]byte(holder)) {
			t.Fatalf("splicing into %d..%d breaks the JSON text inside %s", o.RawStart, o.RawEnd, o.Path)
		}
	}
}

// findAt finds every observation of a body written for api, and checks what
// holds of each API's bodies: APIOf tells the body's API, and the
// observations lie, in order, at paths in the body, their raw spans holding
// them. It returns them for the checks of the case.
func findAt(t *testing.T, body []byte, api focusgate.API, paths []string) []Observation {
	t.Helper()
	if got := APIOf(body); got != api {
		t.Fatalf("APIOf = %v, want %v", got, api)
	}
	obs, err := Find(body, api, Options{All: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(obs) != len(paths) {
		t.Fatalf("%d observations, want %d", len(obs), len(paths))
	}
	for i, o := range obs {
		if o.Path != paths[i] {
			t.Errorf("observation %d at %s, want %s", i, o.Path, paths[i])
		}
		if !gjson.GetBytes(body, o.Path).Exists() {
			t.Errorf("observation %d: path %s is not in the body", i, o.Path)
		}
		checkRaw(t, body, o)
	}
	return obs
}

// unwrapped says whether no line of a tree keeps anything before its own
// text: no gutter.
func unwrapped(places []place) bool {
	for _, p := range places {
		if p.own != p.start {
			return false
		}
	}
	return true
}

// numberedRows says whether a line of several rows (a name with a line
// break in it) has a gutter, which each of its rows then has.
func numberedRows(p place, line string) bool {
	return p.own > p.start && strings.Contains(line, "\n")
}

// decodeTimes decodes the content of a JSON string times times over, as
// detection does.
func decodeTimes(raw string, times int) string {
	for range times {
		raw = unquote(raw)
	}
	return raw
}

// checkWriteBack verifies that a tree whose lines lie at places in src,
// escaped times times, goes back exactly. The places are in order and each
// line's own text decodes to the line of text, what precedes it to line
// numbers only; written back with every line kept, the tree is its span of
// src; with every line a stub of its own text, or every other one, it
// decodes as the span does, and is the span byte for byte when src escapes
// as appendEscaped does; with markers in place of runs of lines, every line
// kept is still there, decoded.
func checkWriteBack(t testing.TB, src []byte, places []place, times int, text string, lines []focusgate.Line) {
	t.Helper()
	n := len(lines)
	if len(places) != n {
		t.Fatalf("%d places for %d lines", len(places), n)
	}
	prev := places[0].start
	for k, p := range places {
		if p.start < prev || p.own < p.start || p.end < p.own || p.end > len(src) {
			t.Fatalf("line %d placed at %d, %d, %d after %d in %d bytes", k, p.start, p.own, p.end, prev, len(src))
		}
		prev = p.end
		l := lines[k]
		if numberedRows(places[k], text[l.Start:l.End]) {
			continue // each of its rows has its own number
		}
		if got := decodeTimes(string(src[p.own:p.end]), times); got != text[l.Start:l.End] {
			t.Fatalf("line %d lies where %.80q is, not %.80q", k, got, text[l.Start:l.End])
		}
		g := decodeTimes(string(src[p.start:p.own]), times)
		for gutterLen(g) > 0 {
			g = g[gutterLen(g):]
		}
		if g != "" {
			t.Fatalf("line %d keeps %q before its own text", k, decodeTimes(string(src[p.start:p.own]), times))
		}
	}
	span := src[places[0].start:places[n-1].end]
	write := func(pieces []focusgate.Piece) []byte {
		out := appendWritten(nil, src, places, times, pieces)
		if size := writtenSize(places, times, pieces); size > len(out) {
			t.Fatalf("%d bytes written, %d foreseen", len(out), size)
		}
		return out
	}
	if got := write([]focusgate.Piece{{Kind: focusgate.PieceKept, From: 0, To: n}}); !bytes.Equal(got, span) {
		t.Fatalf("the tree kept whole goes back as %.80q, not %.80q", got, span)
	}
	decoded := decodeTimes(string(span), times)
	canonical := bytes.Equal(appendEscaped(nil, decoded, times), span)
	for _, every := range []int{1, 2} {
		var pieces []focusgate.Piece
		for k, l := range lines {
			if k%every == 0 && !numberedRows(places[k], text[l.Start:l.End]) {
				pieces = append(pieces, focusgate.Piece{Kind: focusgate.PieceStub, From: k, To: k + 1, Text: text[l.Start:l.End]})
			} else {
				pieces = append(pieces, focusgate.Piece{Kind: focusgate.PieceKept, From: k, To: k + 1})
			}
		}
		got := write(pieces)
		if decodeTimes(string(got), times) != decoded {
			t.Fatalf("every %d line a stub of itself, the tree decodes to %.80q, not %.80q", every, decodeTimes(string(got), times), decoded)
		}
		if canonical && !bytes.Equal(got, span) {
			t.Fatalf("every %d line a stub of itself, the tree goes back as %.80q, not %.80q", every, got, span)
		}
	}
	var pieces []focusgate.Piece
	for k := 0; k < n; k += 3 {
		pieces = append(pieces, focusgate.Piece{Kind: focusgate.PieceKept, From: k, To: k + 1})
		if k+1 < n {
			pieces = append(pieces, focusgate.Piece{Kind: focusgate.PieceMarker, From: k + 1, To: min(k+3, n), Text: "... pruned \"here\" ..."})
		}
	}
	got, at := decodeTimes(string(write(pieces)), times), 0
	for k := 0; k < n; k += 3 {
		line := text[lines[k].Start:lines[k].End]
		if numberedRows(places[k], line) {
			continue
		}
		i := strings.Index(got[at:], line)
		if i < 0 {
			t.Fatalf("line %d, kept, is not in what was written back after byte %d: %.80q", k, at, line)
		}
		at += i + len(line)
	}
	if strings.Count(got, "... pruned \"here\" ...") != len(pieces)/2 {
		t.Fatalf("the markers are not in what was written back")
	}
}
