package detect

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/focusgate/focusgate"
)

// TestFindAXTrees wraps every real tree in the prompt layout of the agent that
// produced it and expects exactly that tree back, with the goal and history as the
// layout put them.
func TestFindAXTrees(t *testing.T) {
	const history = "## step 0\n\n<think>\nThe search box is visible, I will type the product name.\n</think>\n\n<action>\nfill('420', 'wireless headphones')\n</action>\n\n" +
		"## step 1\n\n<action>\nclick('425')\n</action>\n\n### Error from previous action:\nTimeoutError: locator.click: Timeout 500ms exceeded."
	tests := []struct {
		file    string
		layout  string // "genericagent", "webarena" or "agentoccam"
		format  Format
		focused string
	}{
		{"agentlab-tutorial_webarena_shopping_prompt_0_tabs-restored.txt", "genericagent", BrowserGym, ""},
		{"agentlab-tutorial_webarena_shopping_prompt_0_with_doomarena_popup_injection_tabs-restored.txt", "genericagent", BrowserGym, "1845"},
		{"agentlab-tutorial_webarena_shopping_prompt_2_tabs-restored.txt", "genericagent", BrowserGym, ""},
		{"agentlab-tutorial_webarena_shopping_prompt_2_with_doomarena_popup_injection_tabs-restored.txt", "genericagent", BrowserGym, "2041"},
		{"agentoccam_obs-opt_shopping_my_account.txt", "agentoccam", AgentOccam, ""},
		{"bgym-pr301_web_amazon_macbook.txt", "genericagent", BrowserGym, ""},
		{"bgym-pr301_web_apple_buy_ipad_pro.txt", "genericagent", BrowserGym, ""},
		{"bgym-pr301_web_bestbuy_checkout.txt", "genericagent", BrowserGym, "521"},
		{"bgym-pr301_web_bestbuy_search.txt", "genericagent", BrowserGym, "5259"},
		{"bgym-pr301_workarena_catalog.txt", "genericagent", BrowserGym, ""},
		{"bgym-pr301_workarena_catalog_focused_frames.txt", "genericagent", BrowserGym, "222"},
		{"bgym-pr301_workarena_home_allmenu.txt", "genericagent", BrowserGym, "224"},
		{"bgym-pr301_workarena_ipad_pro_form.txt", "genericagent", BrowserGym, "a206"},
		{"bgym-pr301_workarena_kb_search_results.txt", "genericagent", BrowserGym, ""},
		{"bgym-pr301_workarena_order_status.txt", "genericagent", BrowserGym, ""},
		{"bgym-pr301_workarena_standard_laptop_form.txt", "genericagent", BrowserGym, "a230"},
		{"webarena-fmt_step-fewshot_gitlab_issues.txt", "webarena", WebArena, "4371"},
		{"webarena-fmt_step-fewshot_gitlab_project.txt", "webarena", WebArena, "34973"},
	}
	files, err := os.ReadDir(sharedAXTrees)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != len(tests) {
		t.Fatalf("%s holds %d files, the table covers %d", sharedAXTrees, len(files), len(tests))
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			content := strings.TrimRight(readFile(t, filepath.Join(sharedAXTrees, tt.file)), "\n")
			tree := content
			var body []byte
			var goal, hist string
			switch tt.layout {
			case "genericagent":
				goal, hist = "Find the reviews that mention small ear cups\nand list their authors.", history
				body = genericAgentBody(t, goal, tree, "None", hist)
			case "webarena":
				// The observation starts with the tab header, which is not part of the tree.
				_, tree, _ = strings.Cut(content, "\n\n")
				goal, hist = "Open my latest updated issue that has keyword \"better\" in its title to check if it is closed", "click [4700] where [4700] is [4700] link 'Issues'"
				body = webArenaBody(t, content, "http://gitlab.example.com/dashboard/issues", goal, hist)
			case "agentoccam":
				goal, hist = "What is the phone number in my default shipping address?", "click [3987] where [3987] is link 'My Account'"
				body = agentOccamBody(t, goal, hist, tree)
			}
			obs, err := Find(body, focusgate.APIChat, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if len(obs) != 1 {
				t.Fatalf("found %d observations, want 1", len(obs))
			}
			o := obs[0]
			if first, last := firstLine(o.Text), lastLine(o.Text); first != firstLine(tree) || last != lastLine(tree) {
				t.Errorf("span runs from %.60q to %.60q, want %.60q to %.60q", first, last, firstLine(tree), lastLine(tree))
			}
			if o.Text != tree {
				t.Errorf("Text differs from the tree (%d vs %d bytes)", len(o.Text), len(tree))
			}
			if want := strings.Count(tree, "\n") + 1; len(o.Lines) != want {
				t.Errorf("%d lines, want %d", len(o.Lines), want)
			}
			if o.Format != tt.format {
				t.Errorf("Format = %s, want %s", o.Format, tt.format)
			}
			if o.FocusedBID != tt.focused {
				t.Errorf("FocusedBID = %q, want %q", o.FocusedBID, tt.focused)
			}
			if o.Goal != goal {
				t.Errorf("Goal = %q, want %q", o.Goal, goal)
			}
			if o.History != hist {
				t.Errorf("History = %q, want %q", o.History, hist)
			}
			checkRaw(t, body, o)
		})
	}
}

// TestFindAgentLabRequests checks the real AgentLab requests against an independent
// reading of their parts.
func TestFindAgentLabRequests(t *testing.T) {
	for _, name := range []string{"genericagent_webarena_shopping_step0.json", "genericagent_workarena_standard_laptop_step5_with_history.json"} {
		t.Run(name, func(t *testing.T) {
			body := []byte(readFile(t, filepath.Join(sharedRequests, name)))
			var req struct {
				Messages []struct {
					Content json.RawMessage `json:"content"`
				} `json:"messages"`
			}
			if err := json.Unmarshal(body, &req); err != nil {
				t.Fatal(err)
			}
			var parts []part
			if err := json.Unmarshal(req.Messages[1].Content, &parts); err != nil {
				t.Fatal(err)
			}
			obsPart := parts[2].Text
			_, afterNotes, _ := strings.Cut(obsPart, "present, the element is not visible on the page.\n\n")
			tree, _, _ := strings.Cut(afterNotes, "\n\n## Focused element:")
			_, hist, _ := strings.Cut(obsPart, "# History of interaction with the task:\n")
			hist, _, _ = strings.Cut(hist, "\n# Action space:")

			obs, err := Find(body, focusgate.APIChat, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if len(obs) != 1 {
				t.Fatalf("found %d observations, want 1", len(obs))
			}
			o := obs[0]
			if o.Path != "messages.1.content.2.text" {
				t.Errorf("Path = %s", o.Path)
			}
			if o.Text != tree {
				t.Errorf("span runs from %.60q to %.60q, want %.60q to %.60q", firstLine(o.Text), lastLine(o.Text), firstLine(tree), lastLine(tree))
			}
			if o.Goal != parts[1].Text {
				t.Errorf("Goal = %q, want %q", o.Goal, parts[1].Text)
			}
			if o.History != strings.TrimSpace(hist) {
				t.Errorf("History = %q, want %q", o.History, strings.TrimSpace(hist))
			}
			checkRaw(t, body, o)
		})
	}
}

// golden is what the golden files record of an observation.
type golden struct {
	Path       string
	Format     Format
	Span       [2]int
	Raw        [2]int
	Lines      int
	First      string
	Last       string
	FocusedBID string
	Goal       string
	History    string
	Nested     int `json:",omitempty"`
}

func goldenOf(obs []Observation) []golden {
	g := make([]golden, len(obs))
	for i, o := range obs {
		g[i] = golden{o.Path, o.Format, [2]int{o.Start, o.End}, [2]int{o.RawStart, o.RawEnd}, len(o.Lines), firstLine(o.Text), lastLine(o.Text), o.FocusedBID, o.Goal, o.History, o.Nested}
	}
	return g
}

// TestFindRequests runs every request body through Find and compares every
// observation with testdata/golden. By default exactly one, the newest, is selected.
func TestFindRequests(t *testing.T) {
	for _, path := range requestFiles(t) {
		name := filepath.Base(path)
		t.Run(name, func(t *testing.T) {
			body := []byte(readFile(t, path))
			all, err := Find(body, apiOf(path), Options{All: true})
			if err != nil {
				t.Fatal(err)
			}
			newest, err := Find(body, apiOf(path), Options{})
			if err != nil {
				t.Fatal(err)
			}
			if len(newest) != 1 || len(all) == 0 {
				t.Fatalf("found %d observations by default and %d in all, want 1 and at least 1", len(newest), len(all))
			}
			if got, want := goldenOf(newest)[0], goldenOf(all)[len(all)-1]; got != want {
				t.Errorf("default selection %+v is not the newest of all %+v", got, want)
			}
			// The newest two, oldest first, are the last two of all.
			two, err := Find(body, apiOf(path), Options{Newest: 2})
			if err != nil {
				t.Fatal(err)
			}
			if got, want := goldenOf(two), goldenOf(all[max(len(all)-2, 0):]); !slices.Equal(got, want) {
				t.Errorf("the newest two %+v are not the last two of all %+v", got, want)
			}
			for _, o := range all {
				checkRaw(t, body, o)
			}
			var buf bytes.Buffer
			enc := json.NewEncoder(&buf)
			enc.SetEscapeHTML(false)
			enc.SetIndent("", "\t")
			if err := enc.Encode(goldenOf(all)); err != nil {
				t.Fatal(err)
			}
			got := buf.String()
			file := filepath.Join("testdata", "golden", strings.TrimSuffix(name, ".json")+".golden.json")
			if *update {
				if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(file, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if want := readFile(t, file); got != want {
				t.Errorf("observations differ from %s (run with -update to accept):\n%s", file, got)
			}
		})
	}
}

// TestFindTraces puts every recorded BrowserGym tree into a GenericAgent prompt and
// expects it back whole, with its goal and history.
func TestFindTraces(t *testing.T) {
	traces := readTraces(t)
	whole := 0
	for _, tr := range traces {
		hist := genericAgentHistory(tr)
		body := genericAgentBody(t, tr.Goal, tr.AXTree, "None", hist)
		obs, err := Find(body, focusgate.APIChat, Options{})
		if err != nil {
			t.Fatalf("%s: %v", tr.ID, err)
		}
		if len(obs) != 1 || obs[0].Text != tr.AXTree {
			t.Errorf("%s: %d observations, or not the whole tree", tr.ID, len(obs))
			continue
		}
		o := obs[0]
		if o.Goal != strings.TrimSpace(tr.Goal) {
			t.Errorf("%s: Goal = %q, want %q", tr.ID, o.Goal, tr.Goal)
		}
		wantHist := strings.TrimSpace(hist)
		if len(wantHist) <= MaxHistoryBytes && o.History != wantHist || !strings.HasSuffix(wantHist, o.History) || len(o.History) > MaxHistoryBytes {
			t.Errorf("%s: History = %q, want %q", tr.ID, o.History, wantHist)
		}
		if !containsBID(o.Lines, tr.TargetID) {
			t.Errorf("%s: the target %s is not among the lines", tr.ID, tr.TargetID)
		}
		whole++
	}
	t.Logf("%d of %d recorded trees detected whole", whole, len(traces))
	if whole != 491 {
		t.Errorf("%d trees detected whole, want all 491", whole)
	}
}

func containsBID(lines []focusgate.Line, bid string) bool {
	for _, l := range lines {
		if l.BID == bid {
			return true
		}
	}
	return false
}

// TestFindNegative sends every file of the negative corpus as a user message, a tool
// result and a Responses input: none may be taken for a tree.
func TestFindNegative(t *testing.T) {
	files, err := filepath.Glob("testdata/negative/*")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 40 {
		t.Fatalf("the negative corpus has %d files; keep it large", len(files))
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			text := readFile(t, file)
			if b := Blocks(text); len(b) != 0 {
				t.Errorf("Blocks found %d trees; the first starts with %.80q", len(b), text[b[0].Start:])
			}
			bodies := map[focusgate.API][]byte{
				focusgate.APIChat: chatBody(t, message{Role: "user", Content: text}, message{Role: "assistant", Content: "Done."},
					message{Role: "tool", Content: []part{{"text", text}}}),
				focusgate.APIResponses: mustJSON(t, map[string]any{"instructions": text, "input": []any{
					map[string]any{"role": "user", "content": []part{{"input_text", text}}},
					map[string]any{"type": "function_call_output", "call_id": "c1", "output": text},
				}}),
			}
			for api, body := range bodies {
				if obs, err := Find(body, api, Options{All: true}); err != nil || len(obs) != 0 {
					t.Errorf("Find(api %d) = %d observations, %v; want none", api, len(obs), err)
				}
			}
		})
	}
}

func TestFindRejectsNonObjects(t *testing.T) {
	for _, body := range []string{
		"", "  ", "null", "[]", `"messages"`, "{", `{"messages": [}`, `{"messages": []} trailing`,
		`{"messages": [{"role": "user", "content": "a` + "\x01" + `b"}]}`, `{"a": tru}`, `{"a": 01}`, `{"a": "\x"}`,
		`{"a": "\ud83d"` /* unterminated */, `{"a" 1}`, `{"a": 1,}`, `{"a": [1 2]}`,
	} {
		for _, api := range []focusgate.API{focusgate.APIChat, focusgate.APIResponses} {
			if obs, err := Find([]byte(body), api, Options{}); !errors.Is(err, ErrNotJSON) || obs != nil {
				t.Errorf("Find(%q) = %v, %v; want ErrNotJSON", body, obs, err)
			}
		}
	}
}

// MayHoldPage may only turn away bodies that hold no page: every captured
// body in which Find finds one passes, as do bodies that are not JSON
// objects (Find reports those); bodies without ids or cues do not.
func TestMayHoldPage(t *testing.T) {
	paths, apis := corpus(t)
	held := 0
	for i, p := range paths {
		body := []byte(readFile(t, p))
		obs, err := Find(body, apis[i], Options{All: true})
		if err == nil && len(obs) > 0 {
			held++
			if !MayHoldPage(body) {
				t.Errorf("%s: %d pages found, but MayHoldPage says none", p, len(obs))
			}
		}
	}
	if held < 20 {
		t.Fatalf("only %d captured bodies hold a page; the corpus is too small to say anything", held)
	}

	notes := readFile(t, "testdata/negative/sprint_notes.md")
	for _, tt := range []struct {
		name string
		body string
		want bool
	}{
		{"a tree", string(chatBody(t, message{Role: "tool", Content: bgTree})), true},
		{"ids by their cue alone", string(chatBody(t, message{Role: "tool", Content: chromeTree})), true},
		{"ids split across messages", string(chatBody(t, message{Role: "user", Content: "[a1] [b2]"}, message{Role: "user", Content: "[c3]"})), true},
		{"not an object", "model=gpt-4.1 [1] [2]", true},
		{"not an object, no ids", "model=gpt-4.1", true},
		{"an array", ` [{"content":"x"}]`, true},
		{"empty", "", true},
		{"chat", `{"model":"gpt-4.1","messages":[{"role":"user","content":"- one\n- two\n- three"}]}`, false},
		{"markdown boxes and links", string(chatBody(t, message{Role: "user", Content: notes})), false},
		{"two ids", `{"messages":[{"role":"user","content":"[a1] [b2] [x] [#3]"}]}`, false},
		{"a malformed object", `{"messages": [}`, false},
	} {
		if got := MayHoldPage([]byte(tt.body)); got != tt.want {
			t.Errorf("%s: MayHoldPage = %v, want %v", tt.name, got, tt.want)
		}
	}
}

// bgTree is a small BrowserGym tree of nine lines.
const bgTree = "RootWebArea 'Shop', focused\n\t[12] link 'Home'\n\t[13] link 'Cart'\n\t[14] textbox 'Search', focused\n\tStaticText 'Deals'\n\t[15] button 'Go'\n\t\t[16] image 'logo'\n\t[17] link 'Help'\n\tStaticText 'Footer'"

func TestFind(t *testing.T) {
	tree2 := strings.ReplaceAll(bgTree, "'Shop'", "'Shop, page 2'")
	tree3 := strings.ReplaceAll(bgTree, "'Shop'", "'Shop, page 3'")
	tests := []struct {
		name  string
		api   focusgate.API
		opts  Options
		body  string
		paths []string // paths of the observations found, oldest first
		texts []string
		goals []string // when set, the goal of every observation
		hists []string // when set, the history of every observation
	}{
		{
			name: "body without messages", api: focusgate.APIChat,
			body: `{"model": "gpt-4.1", "input": "x"}`,
		},
		{
			name: "messages that are not an array", api: focusgate.APIChat,
			body: `{"messages": {"role": "user"}}`,
		},
		{
			name: "tree in a plain user message", api: focusgate.APIChat,
			body:  string(chatBody(t, message{Role: "user", Content: "Task: buy a phone case\n\nPage:\n" + bgTree + "\n\nNext action?"})),
			paths: []string{"messages.0.content"}, texts: []string{bgTree},
			goals: []string{"Task: buy a phone case\n\nPage:\n\nNext action?"}, hists: []string{""},
		},
		{
			name: "only the newest observation by default", api: focusgate.APIChat,
			body: string(chatBody(t,
				message{Role: "user", Content: bgTree},
				message{Role: "assistant", Content: "click('13')"},
				message{Role: "user", Content: tree2})),
			paths: []string{"messages.2.content"}, texts: []string{tree2},
			hists: []string{"click('13')"},
		},
		{
			name: "every observation on request, each with its own history", api: focusgate.APIChat, opts: Options{All: true},
			body: string(chatBody(t,
				message{Role: "system", Content: "You are a web agent."},
				message{Role: "user", Content: "Buy a phone case."},
				message{Role: "tool", Content: bgTree},
				message{Role: "assistant", Content: "click('13')"},
				message{Role: "tool", Content: tree2},
				message{Role: "assistant", Content: "click('15')"},
				message{Role: "tool", Content: tree3})),
			paths: []string{"messages.2.content", "messages.4.content", "messages.6.content"}, texts: []string{bgTree, tree2, tree3},
			goals: []string{"Buy a phone case.", "Buy a phone case.", "Buy a phone case."},
			hists: []string{"", "click('13')", "click('13')\n\nclick('15')"},
		},
		{
			name: "several trees in one string; a section never reaches across a tree", api: focusgate.APIChat, opts: Options{All: true},
			body: string(chatBody(t, message{Role: "user", Content: "# Goal\nBuy a phone case.\n\n# Pages\n" + bgTree + "\n\n" + tree2 +
				"\n\n# Goal\nThen check out.\n" + tree3 + "\n\n# History of past actions\nclick('13')\n"})),
			paths: []string{"messages.0.content", "messages.0.content", "messages.0.content"}, texts: []string{bgTree, tree2, tree3},
			goals: []string{"Buy a phone case.", "Buy a phone case.", "Then check out."},
			hists: []string{"click('13')", "click('13')", "click('13')"},
		},
		{
			name: "a tree quoted by the assistant is not an observation", api: focusgate.APIChat,
			body:  string(chatBody(t, message{Role: "user", Content: bgTree}, message{Role: "assistant", Content: tree2})),
			paths: []string{"messages.0.content"}, texts: []string{bgTree},
		},
		{
			name: "part indices count image parts", api: focusgate.APIChat,
			body: `{"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}, {"type": "text", "text": ` +
				string(mustJSON(t, bgTree)) + `}]}]}`,
			paths: []string{"messages.0.content.1.text"}, texts: []string{bgTree},
		},
		{
			name: "escapes: \\u000a newlines, \\/ and surrogate pairs", api: focusgate.APIChat,
			body: `{"messages":[{"role":"user","content":"\ud83d\ude00 caf\u00e9\u000a` +
				strings.NewReplacer("\n", `\u000a`, "\t", `\t`, "'Home'", `'H\/ome \ud83c\udfe0'`).Replace(bgTree) + `\n\u00e9"}]}`,
			paths: []string{"messages.0.content"}, texts: []string{strings.Replace(bgTree, "'Home'", "'H/ome \U0001F3E0'", 1)},
			goals: []string{"\U0001F600 café\n\né"},
		},
		{
			name: "invalid UTF-8 and lone surrogates are kept as they came", api: focusgate.APIChat,
			body:  "{\"messages\":[{\"role\":\"user\",\"content\":\"\xff\xfe\\n" + strings.NewReplacer("\n", `\n`, "\t", `\t`, "Deals", "De\xffals", "Footer", `Foo\ud83dter`).Replace(bgTree) + "\"}]}",
			paths: []string{"messages.0.content"}, texts: []string{strings.NewReplacer("Deals", "De\xffals", "Footer", "Foo\xed\xa0\xbdter").Replace(bgTree)},
			goals: []string{"\xff\xfe"},
		},
		{
			name: "Responses: instructions and an input string", api: focusgate.APIResponses, opts: Options{All: true},
			body:  string(mustJSON(t, map[string]any{"input": "Now this page:\n" + tree2, "instructions": "Example page:\n" + bgTree})),
			paths: []string{"instructions", "input"}, texts: []string{bgTree, tree2},
			goals: []string{"Example page:", "Now this page:"},
		},
		{
			name: "Responses: assistant output_text is history, not an observation", api: focusgate.APIResponses,
			body: string(mustJSON(t, map[string]any{"input": []any{
				map[string]any{"role": "user", "content": []part{{"input_text", "Buy a phone case."}}},
				map[string]any{"type": "message", "role": "assistant", "content": []part{{"output_text", bgTree}}},
				map[string]any{"type": "function_call_output", "call_id": "c1", "output": []part{{"input_text", tree2}}},
			}})),
			paths: []string{"input.2.output.0.text"}, texts: []string{tree2},
			goals: []string{"Buy a phone case."}, hists: []string{bgTree},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obs, err := Find([]byte(tt.body), tt.api, tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			if len(obs) != len(tt.paths) {
				t.Fatalf("found %d observations, want %d", len(obs), len(tt.paths))
			}
			for i, o := range obs {
				if o.Path != tt.paths[i] || o.Text != tt.texts[i] {
					t.Errorf("observation %d: %s %q, want %s %q", i, o.Path, o.Text, tt.paths[i], tt.texts[i])
				}
				if tt.goals != nil && o.Goal != tt.goals[i] {
					t.Errorf("observation %d: Goal = %q, want %q", i, o.Goal, tt.goals[i])
				}
				if tt.hists != nil && o.History != tt.hists[i] {
					t.Errorf("observation %d: History = %q, want %q", i, o.History, tt.hists[i])
				}
				checkRaw(t, []byte(tt.body), o)
			}
		})
	}
}

func TestFindBoundsGoalAndHistory(t *testing.T) {
	goal := strings.Repeat("é", MaxGoalBytes) // two bytes each
	var hist strings.Builder
	for i := 0; hist.Len() < 3*MaxHistoryBytes; i++ {
		hist.WriteString("## step " + strings.Repeat("x", i%7) + "\n\n<action>\nclick('12')\n</action>\n\n")
	}
	hist.WriteString("## step last\n\n<action>\nclick('99')\n</action>\n")
	body := genericAgentBody(t, goal, bgTree, "None", hist.String())
	obs, err := Find(body, focusgate.APIChat, Options{})
	if err != nil || len(obs) != 1 {
		t.Fatalf("Find = %d, %v", len(obs), err)
	}
	o := obs[0]
	if len(o.Goal) > MaxGoalBytes || len(o.Goal) < MaxGoalBytes-1 || !strings.HasPrefix(goal, o.Goal) {
		t.Errorf("Goal has %d bytes and is not the start of the goal", len(o.Goal))
	}
	full := strings.TrimSpace(hist.String())
	if cut := len(full) - len(o.History); len(o.History) > MaxHistoryBytes || !strings.HasSuffix(full, o.History) || full[cut-1] != '\n' {
		t.Errorf("History has %d bytes and is not the end of the history on a line start: %.40q...", len(o.History), o.History)
	}
}

func TestModel(t *testing.T) {
	if got := Model([]byte(`{"messages": [], "model": "gpt-4.1-mini"}`)); got != "gpt-4.1-mini" {
		t.Errorf("Model = %q", got)
	}
	if got := Model([]byte(`{"messages": []}`)); got != "" {
		t.Errorf("Model = %q, want empty", got)
	}
}

// A client that writes the '=' of Playwright's "[ref=e3]" as a \u escape,
// as Gson does, sends the same page: it is found as the upstream's JSON
// reader will read it, though its raw bytes show no id. (chrome-devtools-mcp's
// "uid=" lines so escaped are not: looking for them would cost every request
// that holds no page.)
func TestPagesWithEscapedIDsAreFound(t *testing.T) {
	texts := []string{"Goal: submit\n" + playwrightTree, "Goal: submit\n" + bgTree}
	request := func(escape func(string) string) string {
		var lits []string
		for _, text := range texts {
			lit, err := json.Marshal(text)
			if err != nil {
				t.Fatal(err)
			}
			lits = append(lits, `{"role":"user","content":`+escape(string(lit))+`}`)
		}
		return `{"model":"gpt-4.1","messages":[` + strings.Join(lits, ",") + `]}`
	}
	plain := request(func(lit string) string { return lit })
	for _, tc := range []struct{ name, from, to string }{
		{"'=' as Gson writes it", "=", `\u003d`},
		{"'=' in capitals", "=", `\u003D`},
		{"'=' and quotes as Gson writes them", "'", `\u0027`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := request(func(lit string) string {
				lit = strings.ReplaceAll(lit[1:len(lit)-1], tc.from, tc.to)
				return `"` + strings.ReplaceAll(lit, "=", `\u003d`) + `"`
			})
			if body == plain || !json.Valid([]byte(body)) {
				t.Fatalf("the escaped body is not a different JSON text of the same request")
			}
			if !MayHoldPage([]byte(body)) {
				t.Error("MayHoldPage says no page")
			}
			want, err := Find([]byte(plain), focusgate.APIChat, Options{All: true})
			if err != nil || len(want) != 2 {
				t.Fatalf("the plain body: %d pages, %v", len(want), err)
			}
			got, err := Find([]byte(body), focusgate.APIChat, Options{All: true})
			if err != nil || len(got) != len(want) {
				t.Fatalf("%d pages found, %v; want %d", len(got), err, len(want))
			}
			for i := range got {
				if got[i].Text != want[i].Text {
					t.Errorf("page %d: %q, want %q", i, got[i].Text, want[i].Text)
				}
			}
		})
	}
}
