package detect

import (
	"slices"
	"strings"
)

// Format names a page format: one way agents write a web page into a prompt.
type Format string

// The registered formats; see registry.
const (
	BrowserGym     Format = "browsergym" // BrowserGym/AgentLab, GenericAgent, OpenHands
	WebArena       Format = "webarena"
	AgentOccam     Format = "agentoccam"
	Playwright     Format = "playwright"
	BrowserUse     Format = "browser-use"
	Stagehand      Format = "stagehand"
	ChromeDevTools Format = "chrome-devtools"
)

// spec is everything focusgate knows about one page format, in one place: how a
// line reads (its grammar, which also says how element ids look and how the
// format marks the focused element), what makes a string worth decoding, which
// prompt labels state the goal next to it, how a pruned element and a run of
// pruned lines are written back, and the fixture that shows a real page.
//
// Adding a format (see also README.md, "Adding a page format"):
//
//  1. Write detect/format_<name>.go with a Format constant, a parse function
//     for one line (reporting depth, id, role and focus, and spanning names that
//     run over several lines) and a spec value naming it, its ids test, its
//     stub and marker syntax and its fixture.
//  2. Add the spec to registry below. Order matters only when two grammars read
//     the same lines equally long: the earlier one wins.
//  3. Put a real page, as the tool printed it, in detect/testdata/formats/ and
//     its expected lines in the fixture's .golden.txt (go test ./detect/ -run
//     TestFormatFixtures -update, then review). TestFormatFixtures fails for a
//     registered format without a fixture.
//  4. Run the negative corpus (TestFindNegative) and the fuzzers: a grammar
//     that accepts prose or code is worse than none.
type spec struct {
	name Format
	// parse reads the element whose line starts at s[p]. It is nil for a format
	// that another format's grammar reports: WebArena's lines are read by
	// BrowserGym's grammar, which tells the two apart by their properties.
	parse parseFunc
	// run collects consecutive elements from p; nil means lineRun.
	run runFunc
	// accept, when set, is a further condition on a run that has MinLines lines
	// and MinIDLines ids, for grammars loose enough to need one.
	accept func(run []element) bool
	// ids is a cheap test, run before the grammar, that a text holds at
	// least MinIDLines lines that may carry one of the format's element ids:
	// it counts a cue that the line of every id holds (the id's own syntax),
	// so that text without enough of them is never parsed line by line. It
	// must never be false where the grammar finds MinIDLines lines with ids:
	// a tree it rejects is not looked for. Nil means the format has no such
	// test: its grammar reads every line.
	ids func(text *screen) bool
	// idCue is a byte string found in every element id of a format whose ids
	// are not in brackets that start with a letter or digit and hold a digit
	// ("[12]", "[ref=e3]", which enoughIDs counts for the others); strings with
	// fewer than MinIDLines of either are never decoded.
	idCue string
	// labels are the prompt labels the format's agent writes around its trees
	// ("instruction", "accessibility tree"), in lower case; a line that starts
	// with one and a ':' (compared without case) holds a prompt field in the
	// rest of the line. goalLabels are those that state the goal.
	labels, goalLabels []string
	// stub writes the stand-in of an element from its line (indentation
	// included), id and role; marker writes note ("... 3 lines pruned ...")
	// placed like line.
	stub   func(line, bid, role string) string
	marker func(line, note string) string
	// fixture is a file of testdata/formats holding a real page in the format.
	fixture string
}

// registry lists every page format detect recognises.
var registry = []*spec{
	&browserGymFormat,
	&webArenaFormat,
	&agentOccamFormat,
	&playwrightFormat,
	&browserUseFormat,
	&stagehandFormat,
	&chromeDevToolsFormat,
}

// grammars are the formats with a grammar of their own, in registry order.
var grammars = func() []*spec {
	var g []*spec
	for _, f := range registry {
		if f.parse != nil {
			g = append(g, f)
		}
	}
	return g
}()

// Formats returns the registered formats in registry order.
func Formats() []Format {
	names := make([]Format, len(registry))
	for i, f := range registry {
		names[i] = f.name
	}
	return names
}

func (f Format) spec() *spec {
	for _, s := range registry {
		if s.name == f {
			return s
		}
	}
	return &unknownFormat
}

// unknownFormat writes the stubs of a Format that is not registered (a
// zero value, a name from an older release) as BrowserGym does: ids in
// brackets are what most agents understand.
var unknownFormat = spec{stub: bracketStub, marker: indentedMarker}

// Stub returns the line that stands for a pruned element in format f: line is
// the element's text in the tree, indentation included, and bid and role are
// what detection read from it. Together with Marker it makes Format satisfy
// prune.Syntax.
func (f Format) Stub(line, bid, role string) string { return f.spec().stub(line, bid, role) }

// Marker returns the line that carries note (what was pruned) in format f,
// placed like line, the first line it replaces.
func (f Format) Marker(line, note string) string { return f.spec().marker(line, note) }

// indentOf returns the leading spaces and tabs of line.
func indentOf(line string) string {
	return line[:len(line)-len(strings.TrimLeft(line, " \t"))]
}

// indentedMarker writes note at the indentation of line: a line of text in
// every format whose trees are not YAML.
func indentedMarker(line, note string) string { return indentOf(line) + note }

// bracketStub writes `[bid] role`, BrowserGym's and WebArena's element syntax.
func bracketStub(line, bid, role string) string {
	s := indentOf(line)
	if bid != "" {
		s += "[" + bid + "]"
		if role != "" {
			s += " "
		}
	}
	return s + role
}

// spaceIndent returns the nesting level of a line indented by two spaces per
// level, and false when the indentation is odd or holds a tab.
func spaceIndent(s string, p, e int) (depth, width int, ok bool) {
	i := p
	for i < e && s[i] == ' ' {
		i++
	}
	if (i-p)%2 != 0 || i < e && s[i] == '\t' {
		return 0, 0, false
	}
	return (i - p) / 2, i - p, true
}

// nested reports whether a run holds more than one level: a real page always
// does, while a numbered list or a log that happens to parse stays flat.
func nested(run []element) bool {
	for _, el := range run[1:] {
		if el.Depth != run[0].Depth {
			return true
		}
	}
	return false
}

// promptLabel returns the registered label a line starts with (compared
// without case, followed by ':'), in lower case, and the length of the label.
func promptLabel(line string) (string, int) {
	for _, f := range registry {
		for _, l := range f.labels {
			if len(line) > len(l) && line[len(l)] == ':' && strings.EqualFold(line[:len(l)], l) {
				return l, len(l)
			}
		}
	}
	return "", 0
}

func hasPromptLabel(line string) bool {
	_, n := promptLabel(line)
	return n > 0
}

// isGoalLabel reports whether a registered format states its goal after label.
func isGoalLabel(label string) bool {
	for _, f := range registry {
		if slices.Contains(f.goalLabels, label) {
			return true
		}
	}
	return false
}

// goalLabelWords are the registered goal labels as they may be written, for
// the cheap test of whether a turn can hold a goal.
func goalLabelWords() [][]byte {
	var words [][]byte
	for _, f := range registry {
		for _, l := range f.goalLabels {
			words = append(words, []byte(l+":"), []byte(strings.ToUpper(l[:1])+l[1:]+":"), []byte(strings.ToUpper(l)+":"))
		}
	}
	return words
}

// hasIDCues reports whether raw holds the id cue of some format at least
// MinIDLines times.
func hasIDCues(raw string) bool {
	s := screen{s: raw}
	for _, f := range grammars {
		if f.idCue != "" && s.has(f.idCue) {
			return true
		}
	}
	return false
}
