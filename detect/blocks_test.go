package detect

import (
	"fmt"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

const (
	agentLabNotes = "## AXTree:\nNote: [bid] is the unique alpha-numeric identifier at the beginning of lines for each element in the AXTree. Always use bid to refer to elements in your actions.\n\n" +
		"Note: You can only interact with visible elements. If the \"visible\" tag is not\npresent, the element is not visible on the page.\n\n"
	webArenaTree = "[1] RootWebArea 'Issues · GitLab' focused: True\n\t[2] link 'Skip to content'\n\t[3] link 'Dashboard'\n\t[4] button '' hasPopup: menu expanded: False\n" +
		"\t[5] textbox 'Search GitLab' required: False\n\t[6] main ''\n\t\t[7] heading 'Issues'\n\t\t[8] StaticText 'byteblaze/a11y-syntax-highlighting#1 '\n\t\t[9]"
	occamTree = "RootWebArea [2634] 'My Account'\n\tlink [3987] 'My Account'\n\tlink [3985] 'My Wish List'\n\ttext 'Welcome to One Stop Market'\n\tcombobox [4190] 'Search' [required: False]\n" +
		"\ttablist [3699]\n\t\ttabpanel\n\t\t\tmenu \"[3394] 'Beauty & Personal Care'; [3459] 'Sports & Outdoors'\"\n\tmain\n\t\theading 'My Account'\n\t\tlink [3863] 'Change Password'"
	playwrightTree = "- generic [ref=e1]:\n  - banner [ref=e2]:\n    - link \"Home\" [ref=e3] [cursor=pointer]:\n      - /url: /\n    - searchbox \"Search\" [active] [ref=e4]\n" +
		"  - main [ref=e5]:\n    - heading \"Laptops\" [level=1] [ref=e6]\n    - text: Sort by\n    - 'option \"Price: low to high\"'\n    - paragraph [ref=e7]: $749.99"
	stagehandTree = "DOM: [0-2] RootWebArea: Shop\n  [0-31] scrollable, html\n    [0-35] body\n      [0-40] link: Home\n      [0-41] combobox: Sort\n        [0-42] option: Price [selected]\n" +
		"      [0-50] iframe\n        [1-4] RootWebArea: Pay\n          [1-4000] status\n      [0-60] checkbox: Gift [checked]"
	chromeTree = "uid=1_0 RootWebArea \"Shop\" url=\"https://shop.example/\"\n  uid=1_1 link \"Home\" url=\"https://shop.example/\"\n  uid=1_2 textbox \"Search\" focusable focused value=\"ear \"cups\"\"\n" +
		"  uid=1_3 ignored\n    uid=1_4 StaticText \"Total:\"\n    uid=1_5 \"$42\"\n    uid=1_6 LineBreak \"\n\"\n    uid=1_7 button \"Buy\" disableable disabled [selected in the DevTools Elements panel]\n  uid=1_8 contentinfo"
	browserUseTree = "[1]<a />\n\tHacker News\n[2]<a />\n\tnew\n1.\n*[3]<a title=upvote />\n[4]<a >Show HN: a tiny\nSQLite queue />\n312 points\n|SCROLL+5]<div />\n\t[6]<input type=text name=q />\n|SCROLL|<div />\n\t[7]<button type=submit />"
)

func TestBlocks(t *testing.T) {
	tests := []struct {
		name    string
		text    string
		trees   []string // the text of every block, in order
		formats []Format
		focused []string
	}{
		{
			name:    "GenericAgent: notes and the focused element stay outside",
			text:    "# Observation of current step:\n\n" + agentLabNotes + bgTree + "\n\n## Focused element:\nbid='14'\n\n\n# History of interaction with the task:\n",
			trees:   []string{bgTree},
			formats: []Format{BrowserGym},
			focused: []string{"14"},
		},
		{
			name:    "a focused element of None leaves the tree's own marker",
			text:    agentLabNotes + strings.Replace(bgTree, "'Search', focused", "'Search'", 1) + "\n\n## Focused element:\nNone\n",
			trees:   []string{strings.Replace(bgTree, "'Search', focused", "'Search'", 1)},
			formats: []Format{BrowserGym},
			focused: []string{""},
		},
		{
			name:    "the prompt's statement wins over the tree's marker",
			text:    bgTree + "\n\n## Focused element:\nbid=\"a17\"\n",
			trees:   []string{bgTree},
			formats: []Format{BrowserGym},
			focused: []string{"a17"},
		},
		{
			name: "OpenHands rulers",
			text: "[Current URL: http://shop.example/]\n[Focused element bid: 15]\n\n[Action executed successfully.]\n============== BEGIN accessibility tree ==============\n" +
				bgTree + "\n============== END accessibility tree ==============\n",
			trees:   []string{bgTree},
			formats: []Format{BrowserGym},
			focused: []string{"15"},
		},
		{
			name:    "WebArena: the tab header stays outside",
			text:    "OBSERVATION:\nTab 0 (current): Issues · GitLab\n\n" + webArenaTree + "\nURL: http://gitlab.example/\nOBJECTIVE: open my issues\nPREVIOUS ACTION: None",
			trees:   []string{webArenaTree},
			formats: []Format{WebArena},
			focused: []string{"1"},
		},
		{
			name:    "AgentOccam",
			text:    "CURRENT OBSERVATION:\n" + occamTree + "\n",
			trees:   []string{occamTree},
			formats: []Format{AgentOccam},
			focused: []string{""},
		},
		{
			name:    "Playwright: the yaml fence stays outside",
			text:    "### Page state\n- Page URL: https://shop.example/\n- Page Title: Laptops\n- Page Snapshot:\n```yaml\n" + playwrightTree + "\n```\n",
			trees:   []string{playwrightTree},
			formats: []Format{Playwright},
			focused: []string{"e4"},
		},
		{
			name:    "browser-use: page text between elements is in, the end marker is out",
			text:    "Interactive elements:\n[Start of page]\n" + browserUseTree + "\n\tSearch\n[End of page]\n</browser_state>\n",
			trees:   []string{browserUseTree},
			formats: []Format{BrowserUse},
			focused: []string{""},
		},
		{
			name:    "two trees in one string",
			text:    "Before:\n" + bgTree + "\n\nAfter the click:\n" + webArenaTree + "\n",
			trees:   []string{bgTree, webArenaTree},
			formats: []Format{BrowserGym, WebArena},
			focused: []string{"14", "1"},
		},
		{
			name:    "a truncated last line ends the tree",
			text:    bgTree + "\n\t[18] link 'Terms and cond\n\nWhat next?",
			trees:   []string{bgTree + "\n\t[18] link 'Terms and cond"},
			formats: []Format{BrowserGym},
			focused: []string{"14"},
		},
		{
			name:    "CRLF line ends",
			text:    "Page:\r\n" + strings.ReplaceAll(bgTree, "\n", "\r\n") + "\r\n\r\nNext?",
			trees:   []string{strings.ReplaceAll(bgTree, "\n", "\r\n") + "\r"},
			formats: []Format{BrowserGym},
			focused: []string{"14"},
		},
		{
			name: "fewer lines than MinLines",
			text: strings.Join(strings.Split(bgTree, "\n")[:MinLines-1], "\n"),
		},
		{
			name: "fewer ids than MinIDLines",
			text: "RootWebArea 'Shop'\n\t[1] link 'Home'\n\t[2] link 'Cart'\n" + strings.Repeat("\tStaticText 'Deals'\n", MinLines),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			blocks := Blocks(tt.text)
			var trees, focused []string
			var formats []Format
			for _, b := range blocks {
				trees = append(trees, tt.text[b.Start:b.End])
				formats = append(formats, b.Format)
				focused = append(focused, b.FocusedBID)
			}
			if !slices.Equal(trees, tt.trees) {
				t.Errorf("trees:\n%q\nwant\n%q", trees, tt.trees)
			}
			if !slices.Equal(formats, tt.formats) {
				t.Errorf("formats %v, want %v", formats, tt.formats)
			}
			if !slices.Equal(focused, tt.focused) {
				t.Errorf("focused %q, want %q", focused, tt.focused)
			}
		})
	}
}

// TestBlocksLines pins the lines of one tree of each grammar: offsets into the
// block, depth from its root, id and role.
func TestBlocksLines(t *testing.T) {
	type line struct {
		text      string
		depth     int
		bid, role string
	}
	tests := []struct {
		name  string
		text  string
		lines []line
	}{
		{
			name: "BrowserGym, with a name that runs over two lines",
			text: "RootWebArea 'Shop', focused\n\t[a12] link 'Home'\n\t\tStaticText 'first\nsecond'\n\t[b3] generic, live='polite'\n\t\t[14] textbox 'Search' value='ear cups', focused\n" +
				"\t[15] button \"It's \\\"here\\\"\", disabled=True\n\tStaticText '\\ue611 Cart'\n\t[16] link 'Help'\n\t[17] Iframe 'ad'",
			lines: []line{
				{"RootWebArea 'Shop', focused", 0, "", "RootWebArea"},
				{"\t[a12] link 'Home'", 1, "a12", "link"},
				{"\t\tStaticText 'first\nsecond'", 2, "", "StaticText"},
				{"\t[b3] generic, live='polite'", 1, "b3", "generic"},
				{"\t\t[14] textbox 'Search' value='ear cups', focused", 2, "14", "textbox"},
				{"\t[15] button \"It's \\\"here\\\"\", disabled=True", 1, "15", "button"},
				{"\tStaticText '\\ue611 Cart'", 1, "", "StaticText"},
				{"\t[16] link 'Help'", 1, "16", "link"},
				{"\t[17] Iframe 'ad'", 1, "17", "Iframe"},
			},
		},
		{
			name: "Playwright",
			text: "```yaml\n" + playwrightTree + "\n```",
			lines: []line{
				{"- generic [ref=e1]:", 0, "e1", "generic"},
				{"  - banner [ref=e2]:", 1, "e2", "banner"},
				{"    - link \"Home\" [ref=e3] [cursor=pointer]:", 2, "e3", "link"},
				{"      - /url: /", 3, "", ""},
				{"    - searchbox \"Search\" [active] [ref=e4]", 2, "e4", "searchbox"},
				{"  - main [ref=e5]:", 1, "e5", "main"},
				{"    - heading \"Laptops\" [level=1] [ref=e6]", 2, "e6", "heading"},
				{"    - text: Sort by", 2, "", "text"},
				{"    - 'option \"Price: low to high\"'", 2, "", "option"},
				{"    - paragraph [ref=e7]: $749.99", 2, "e7", "paragraph"},
			},
		},
		{
			name: "browser-use, with an element whose text runs over two lines",
			text: browserUseTree,
			lines: []line{
				{"[1]<a />", 0, "1", "a"},
				{"\tHacker News", 1, "", ""},
				{"[2]<a />", 0, "2", "a"},
				{"\tnew", 1, "", ""},
				{"1.", 0, "", ""},
				{"*[3]<a title=upvote />", 0, "3", "a"},
				{"[4]<a >Show HN: a tiny\nSQLite queue />", 0, "4", "a"},
				{"312 points", 0, "", ""},
				{"|SCROLL+5]<div />", 0, "5", "div"},
				{"\t[6]<input type=text name=q />", 1, "6", "input"},
				{"|SCROLL|<div />", 0, "", "div"},
				{"\t[7]<button type=submit />", 1, "7", "button"},
			},
		},
		{
			name: "AgentOccam, indented in its prompt",
			text: strings.ReplaceAll("\t"+occamTree, "\n", "\n\t"),
			lines: []line{
				{"\tRootWebArea [2634] 'My Account'", 0, "2634", "RootWebArea"},
				{"\t\tlink [3987] 'My Account'", 1, "3987", "link"},
				{"\t\tlink [3985] 'My Wish List'", 1, "3985", "link"},
				{"\t\ttext 'Welcome to One Stop Market'", 1, "", "text"},
				{"\t\tcombobox [4190] 'Search' [required: False]", 1, "4190", "combobox"},
				{"\t\ttablist [3699]", 1, "3699", "tablist"},
				{"\t\t\ttabpanel", 2, "", "tabpanel"},
				{"\t\t\t\tmenu \"[3394] 'Beauty & Personal Care'; [3459] 'Sports & Outdoors'\"", 3, "", "menu"},
				{"\t\tmain", 1, "", "main"},
				{"\t\t\theading 'My Account'", 2, "", "heading"},
				{"\t\t\tlink [3863] 'Change Password'", 2, "3863", "link"},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			blocks := Blocks(tt.text)
			if len(blocks) != 1 {
				t.Fatalf("found %d blocks, want 1", len(blocks))
			}
			b := blocks[0]
			tree := tt.text[b.Start:b.End]
			var got []line
			for _, l := range b.Lines {
				got = append(got, line{tree[l.Start:l.End], l.Depth, l.BID, l.Role})
			}
			if !slices.Equal(got, tt.lines) {
				t.Errorf("lines:\n%+v\nwant\n%+v", got, tt.lines)
			}
		})
	}
}

func TestBlocksOnTreeFiles(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(sharedAXTrees, "*.txt"))
	if err != nil {
		t.Fatal(err)
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			text := readFile(t, file)
			tree := strings.TrimRight(text, "\n")
			if strings.HasPrefix(tree, "Tab 0") {
				_, tree, _ = strings.Cut(tree, "\n\n")
			}
			blocks := Blocks(text)
			if len(blocks) != 1 || text[blocks[0].Start:blocks[0].End] != tree {
				t.Fatalf("found %d blocks, want the whole tree", len(blocks))
			}
			for i, l := range blocks[0].Lines {
				if i == 0 && (l.Start != 0 || l.Depth != 0) || l.Start > l.End || l.End > len(tree) || l.Depth < 0 {
					t.Fatalf("line %d: %+v", i, l)
				}
			}
		})
	}
}

func TestGrammars(t *testing.T) {
	tests := []struct {
		parse   parseFunc
		line    string
		ok      bool
		bid     string
		role    string
		depth   int
		focused bool
	}{
		{parseBracket, "RootWebArea 'Shop', focused, url='https://x.example/?a=1, b=2'", true, "", "RootWebArea", 0, true},
		{parseBracket, "\t\t[a212] link 'Hardware', clickable, visible", true, "a212", "link", 2, false},
		{parseBracket, "\t[aB12] combobox '' value='All Departments', hasPopup='menu', expanded=False", true, "aB12", "combobox", 1, false},
		{parseBracket, "\t[45] generic, live='assertive', atomic", true, "45", "generic", 1, false},
		{parseBracket, "\t[45] generic", true, "45", "generic", 1, false},
		{parseBracket, "\t\tStaticText 'It\\'s \"quoted\"'", true, "", "StaticText", 2, false},
		{parseBracket, "\t[4383] textbox 'Search GitLab' required: False focused: True", true, "4383", "textbox", 1, true},
		{parseBracket, "\t\t\t[5321]", true, "5321", "", 3, false},
		{parseBracket, "\t[1836] button \"Close ALERT [12] StaticText [ARIA-LABEL: 'IMPORTANT']\", visible", true, "1836", "button", 1, false},
		{parseBracket, "echo 'building'", true, "", "echo", 0, false},
		{parseBracket, "[INFO] server 'api' starting on :8080", false, "", "", 0, false},
		{parseBracket, "[1] A. Vaswani, \"Attention is all you need\"", false, "", "", 0, false},
		{parseBracket, "\t[12] link", false, "", "", 0, false},
		{parseBracket, "\t[12] link 'Home' (new)", false, "", "", 0, false},
		{parseBracket, "\t[12] link 'Home', ", false, "", "", 0, false},
		{parseBracket, "\t[12]<a />", false, "", "", 0, false},
		{parseBracket, "\t[12345678901234567] link 'x'", false, "", "", 0, false},
		{parseBracket, "Tab 0 (current): Issues", false, "", "", 0, false},
		{parseBracket, "- item 'x'", false, "", "", 0, false},

		{parseOccam, "\tlink [3987] 'My Account'", true, "3987", "link", 1, false},
		{parseOccam, "\tcombobox [4190] 'Search' [required: False] [focused: True]", true, "4190", "combobox", 1, true},
		{parseOccam, "\ttablist [3699]", true, "3699", "tablist", 1, false},
		{parseOccam, "\t\ttabpanel", true, "", "tabpanel", 2, false},
		{parseOccam, "Observation", false, "", "", 0, false},
		{parseOccam, "\tlink [3987] 'My Account' extra", false, "", "", 0, false},
		{parseOccam, "\t[3987] link 'My Account'", false, "", "", 0, false},

		{parsePlaywright, "- generic [active] [ref=e1]: Hello, world!", true, "e1", "generic", 0, true},
		{parsePlaywright, "    - link \"Docs: intro\" [ref=f1e13] [cursor=pointer]:", true, "f1e13", "link", 2, false},
		{parsePlaywright, "  - 'heading \"Q&A: ask\" [level=2] [ref=e7]':", true, "e7", "heading", 1, false},
		{parsePlaywright, "      - /url: https://example.com/a?b=c", true, "", "", 3, false},
		{parsePlaywright, "  - text: \"Wages — $1,240.00\"", true, "", "text", 1, false},
		{parsePlaywright, "   - link \"odd indent\" [ref=e2]", false, "", "", 0, false},
		{parsePlaywright, "- Fix the login bug", false, "", "", 0, false},
		{parsePlaywright, "- [ ] write docs", false, "", "", 0, false},
		{parsePlaywright, "- link \"unterminated [ref=e2]", false, "", "", 0, false},

		{browserUseElement, "\t*[12]<button aria-label=Close />", true, "12", "button", 1, false},
		{browserUseElement, "[0]<a >Hacker News />", true, "0", "a", 0, false},
		{browserUseElement, "|SCROLL+3]<div />", true, "3", "div", 0, false},
		{browserUseElement, "|SHADOW(open)|<my-widget />", true, "", "my-widget", 0, false},
		{browserUseElement, "[12] <button />", false, "", "", 0, false},
		{browserUseElement, "[12]<3 />", false, "", "", 0, false},
		{browserUseElement, "||<div />", false, "", "", 0, false},
	}
	for _, tt := range tests {
		el, ok := tt.parse(tt.line, 0)
		if ok != tt.ok {
			t.Errorf("%q: ok = %v, want %v", tt.line, ok, tt.ok)
			continue
		}
		if !ok {
			continue
		}
		if el.BID != tt.bid || el.Role != tt.role || el.Depth != tt.depth || el.focused != tt.focused || el.Start != 0 || el.End != len(tt.line) {
			t.Errorf("%q: bid %q role %q depth %d focused %v span %d..%d; want %q %q %d %v 0..%d",
				tt.line, el.BID, el.Role, el.Depth, el.focused, el.Start, el.End, tt.bid, tt.role, tt.depth, tt.focused, len(tt.line))
		}
	}
}

func TestPage(t *testing.T) {
	small := "RootWebArea 'Menu'\n" + strings.Repeat("\t[1] link 'Home'\n", 8)
	large := "RootWebArea 'Shop'\n" + strings.Repeat("\t[2] button 'Buy'\n", 20)
	b, ok := Page(small + "\nSome text between.\n\n" + large)
	if !ok || b.Lines[0].End-b.Lines[0].Start != len("RootWebArea 'Shop'") || len(b.Lines) != 21 {
		t.Errorf("Page = %+v, %v; want the larger tree", b, ok)
	}
	if _, ok := Page("# Notes\n- one\n- two\n"); ok {
		t.Error("Page found a tree in a markdown list")
	}
}

// TestBlocksForeignLines pins how far a tree reaches over lines its grammar
// cannot read (see maxForeign).
func TestBlocksForeignLines(t *testing.T) {
	bg := strings.Split(bgTree, "\n")
	pw := strings.Split(playwrightTree, "\n")
	insert := func(lines []string, at int, extra ...string) string {
		return strings.Join(slices.Concat(lines[:at], extra, lines[at:]), "\n")
	}
	tests := []struct {
		name  string
		text  string
		trees []string
	}{
		{
			name:  "an unknown property keeps a BrowserGym tree whole",
			text:  insert(bg, 4, "\t\t[99] link 'Deals' (new)"),
			trees: []string{insert(bg, 4, "\t\t[99] link 'Deals' (new)")},
		},
		{
			name:  "two stray text lines keep a BrowserGym tree whole",
			text:  insert(bg, 3, "\t\tSale ends Sunday!", "\t\t  (while stocks last)"),
			trees: []string{insert(bg, 3, "\t\tSale ends Sunday!", "\t\t  (while stocks last)")},
		},
		{
			name:  "an unknown line keeps a Playwright snapshot whole",
			text:  "```yaml\n" + insert(pw, 5, "    - %%unknown-node%%") + "\n```",
			trees: []string{insert(pw, 5, "    - %%unknown-node%%")},
		},
		{
			name:  "three stray lines end the tree",
			text:  bgTree + "\n\tone\n\ttwo\n\tthree\n\t[90] link 'More'",
			trees: []string{bgTree},
		},
		{
			name:  "a stray line at the tree's margin ends it",
			text:  "Page:\n" + bgTree + "\nNote: the page was truncated\n\t[90] link 'More'",
			trees: []string{bgTree},
		},
		{
			name:  "a blank line ends the tree",
			text:  bgTree + "\n\n\t[90] link 'More'",
			trees: []string{bgTree},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var trees []string
			for _, b := range Blocks(tt.text) {
				trees = append(trees, tt.text[b.Start:b.End])
			}
			if !slices.Equal(trees, tt.trees) {
				t.Errorf("trees:\n%q\nwant\n%q", trees, tt.trees)
			}
		})
	}
}

func TestNewGrammars(t *testing.T) {
	tests := []struct {
		parse   parseFunc
		line    string
		ok      bool
		bid     string
		role    string
		depth   int
		focused bool
	}{
		{parseStagehand, "[0-2] RootWebArea: Summit Parka – Shop", true, "0-2", "RootWebArea", 0, false},
		{parseStagehand, "DOM: [0-2] RootWebArea: Shop", true, "0-2", "RootWebArea", 0, false},
		{parseStagehand, "  [0-31] scrollable, html", true, "0-31", "scrollable, html", 1, false},
		{parseStagehand, "      [1-4000] status", true, "1-4000", "status", 3, false},
		{parseStagehand, "    [0-1305] StaticText: ", true, "0-1305", "StaticText", 2, false},
		{parseStagehand, "    [0-1305] StaticText:", true, "0-1305", "StaticText", 2, false},
		{parseStagehand, "    [0-61] option: United Kingdom [selected]", true, "0-61", "option", 2, false},
		{parseStagehand, "    [0-64] checkbox [checked]", true, "0-64", "checkbox", 2, false},
		{parseStagehand, "   [0-4] link: odd indent", false, "", "", 0, false},
		{parseStagehand, "  DOM: [0-2] RootWebArea: a label only at the margin", false, "", "", 0, false},
		{parseStagehand, "[a-1] link: x", false, "", "", 0, false},
		{parseStagehand, "[2024-01-01] deploy: done", false, "", "", 0, false}, // ids are frame-node, one dash
		{parseStagehand, "[12] Note - see below", false, "", "", 0, false},
		{parseStagehand, "[1] A. Vaswani, \"Attention is all you need\"", false, "", "", 0, false},

		{parseChromeDevTools, "uid=1_0 RootWebArea \"Shop\" url=\"https://x.example/?a=\"b\"\"", true, "1_0", "RootWebArea", 0, false},
		{parseChromeDevTools, "  uid=1_11 textbox \"Full name\" focusable focused value=\"Ada\"", true, "1_11", "textbox", 1, true},
		{parseChromeDevTools, "    uid=1_26 \"Total: $\"", true, "1_26", "", 2, false},
		{parseChromeDevTools, "    uid=1_2 textbox value=\"Input\"", true, "1_2", "textbox", 2, false},
		{parseChromeDevTools, "    uid=1_3 ignored", true, "1_3", "ignored", 2, false},
		{parseChromeDevTools, "  uid=1_7 button \"Buy\" [selected in the DevTools Elements panel]", true, "1_7", "button", 1, false},
		{parseChromeDevTools, "  uid=1_5 StaticText \"He said \"hi\" twice\" focusable", true, "1_5", "StaticText", 1, false},
		{parseChromeDevTools, "uid=1000(user) gid=1000(user) groups=1000(user)", false, "", "", 0, false},
		{parseChromeDevTools, "uid=abc root", false, "", "", 0, false},
		{parseChromeDevTools, "  uid=1_5 StaticText \"unterminated", false, "", "", 0, false},
		{parseChromeDevTools, " uid=1_5 link", false, "", "", 0, false},
	}
	for _, tt := range tests {
		el, ok := tt.parse(tt.line, 0)
		if ok != tt.ok {
			t.Errorf("%q: ok = %v, want %v", tt.line, ok, tt.ok)
			continue
		}
		if !ok {
			continue
		}
		if el.BID != tt.bid || el.Role != tt.role || el.Depth != tt.depth || el.focused != tt.focused || el.Start != 0 || el.End != len(tt.line) {
			t.Errorf("%q: bid %q role %q depth %d focused %v span %d..%d; want %q %q %d %v 0..%d",
				tt.line, el.BID, el.Role, el.Depth, el.focused, el.Start, el.End, tt.bid, tt.role, tt.depth, tt.focused, len(tt.line))
		}
	}
	// A name printed with a raw newline runs on to the line that closes it.
	s := "  uid=1_127 LineBreak \"\n\"\n  uid=1_128 \"1 Ridge Road\""
	if el, ok := parseChromeDevTools(s, 0); !ok || el.End != strings.Index(s, "\"\n  uid")+1 || el.Role != "LineBreak" {
		t.Errorf("LineBreak with a raw newline: %+v, %v", el.Line, ok)
	}
}

// idCueTexts are the texts the formats' ids tests are checked on: every
// fixture, every shared page, the fuzz seeds and the negative corpus.
func idCueTexts(t testing.TB) map[string]string {
	t.Helper()
	texts := map[string]string{}
	for _, pattern := range []string{"testdata/formats/*.txt", filepath.Join(sharedAXTrees, "*.txt"), "testdata/negative/*"} {
		files, err := filepath.Glob(pattern)
		if err != nil || len(files) == 0 {
			t.Fatalf("%s: %d files, %v", pattern, len(files), err)
		}
		for _, f := range files {
			texts[f] = readFile(t, f)
		}
	}
	for i, s := range treeSeeds {
		texts[fmt.Sprintf("seed %d", i)] = s
	}
	return texts
}

// A format's ids test screens text before its grammar reads it line by
// line; it may let text through that holds no tree, but must never stop one.
func TestIDCuesNeverHideATree(t *testing.T) {
	for name, s := range idCueTexts(t) {
		t.Run(filepath.Base(name), func(t *testing.T) {
			want := searchBlocks(s, false)
			if got := Blocks(s); !reflect.DeepEqual(got, want) {
				t.Errorf("screened: %d trees, unscreened: %d", len(got), len(want))
			}
		})
	}
}

// The ids tests are what makes text without a page cheap: on notes full of
// list items, links and check boxes ("- [x] Fix ... [#1234](...)"), which
// carry the element-id cue the JSON reader counts, no grammar has to read a
// line.
func TestIDCuesRejectNotes(t *testing.T) {
	notes := readFile(t, "testdata/negative/sprint_notes.md")
	for _, g := range grammars {
		if g.ids == nil {
			t.Errorf("%s has no ids test: its grammar reads every line of every text", g.name)
			continue
		}
		if g.ids(&screen{s: notes}) {
			t.Errorf("%s: the notes pass the ids test", g.name)
		}
	}
	// Which every format's cue can be told from, one line at a time.
	for _, tt := range []struct {
		format Format
		text   string
		want   bool
	}{
		{BrowserGym, "[1] a\n\t[a2] b\n\t\t[3]", true},
		{BrowserGym, "[1] a\n\t[a2] b\n- [x] c", false},
		{AgentOccam, "link [1] a\nlink [2]\nb [3]", true},
		{AgentOccam, "link [1] a\nlink [2]\nb [#3]", false},
		{Playwright, "- a [ref=e1]\n- ref=e2\n- b [checked=false, ref=e3]", true},
		{Playwright, "- a [ref=e1]\n- ref=e2\n- b [checked=false, rev=e3]", false},
		{BrowserUse, "[1]<a\n*[2]<b\n|SHADOW(open)+3]<c", true},
		{BrowserUse, "[1]<a\n*[2]<b\n[3] <c", false},
		{Stagehand, "[0-1] a\n  [2] b\nDOM: [3] c", true},
		{Stagehand, "[0-1] a\n  [2] b\n[x] c", false},
		{ChromeDevTools, "uid=1_0 a\n  uid=1_1\n  uid=1_2", true},
		{ChromeDevTools, "uid=1_0 a\n  uid=1_1\n  id=1_2", false},
	} {
		if got := tt.format.spec().ids(&screen{s: tt.text}); got != tt.want {
			t.Errorf("%s ids(%q) = %v, want %v", tt.format, tt.text, got, tt.want)
		}
	}
}

func FuzzIDCues(f *testing.F) {
	for _, s := range treeSeeds {
		f.Add(s)
	}
	f.Add(readFile(f, "testdata/negative/sprint_notes.md"))
	f.Add("[1] a\n\t[2] b\n\t\t[3] c")
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := Blocks(s), searchBlocks(s, false); !reflect.DeepEqual(got, want) {
			t.Fatalf("screened: %d trees, unscreened: %d", len(got), len(want))
		}
	})
}
