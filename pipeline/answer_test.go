package pipeline_test

import (
	"bytes"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/focusgate/focusgate"
	"github.com/focusgate/focusgate/cache"
	"github.com/focusgate/focusgate/prune"
)

// amazonPage is a real 1,446-line BrowserGym page (amazon.com), about 80k
// tokens: big enough that reading an element id as a line number would cut
// it to one line of 1,446.
const amazonPage = "../testdata/axtrees/bgym-pr301_web_amazon_macbook.txt"

// Answers that name no usable line leave the page whole: the retriever is
// asked once more, then the agent's own bytes go on with failed-open;
// reason=bad-answer. The first four were each read as one or two lines of
// this page by an earlier parser.
func TestUnusableAnswersLeaveThePageWhole(t *testing.T) {
	body := genericAgentBody(t, "Find the cheapest MacBook Air with 16 GB of memory and add it to the cart",
		string(readFile(t, amazonPage)))
	if n := strings.Count(onlyObservation(t, body).Text, "\n") + 1; n != 1446 {
		t.Fatalf("the pipeline sees a tree of %d lines, want 1,446", n)
	}

	tests := []struct {
		name, answer string
		status       focusgate.Status
		reason       focusgate.Reason
		calls        int
	}{
		{"element id in prose", "The agent should click [a405] 'Order Now' to finish the order.", focusgate.StatusFailedOpen, focusgate.ReasonBadAnswer, 2},
		{"element ids in the answer tag", "<think>The price and the cart button.</think><answer>['a252', 'a524']</answer>", focusgate.StatusFailedOpen, focusgate.ReasonBadAnswer, 2},
		{"cut off inside the reasoning", "<think>The page lists the catalog. The relevant element is [a49] and then the", focusgate.StatusFailedOpen, focusgate.ReasonBadAnswer, 2},
		{"negative ranges", "[(-5,-1), (-100,-50)]", focusgate.StatusFailedOpen, focusgate.ReasonBadAnswer, 2},
		{"empty answer", "", focusgate.StatusFailedOpen, focusgate.ReasonBadAnswer, 2},
		// The control: the same page and pipeline prune a usable answer.
		{"usable answer", "<think>The results are near the top.</think><answer>[(1,60), (300,320)]</answer>", focusgate.StatusPruned, "", 1},
	}
	// One token counter for every case: counting the 80k-token page once is
	// enough.
	counter := prune.NewCounter(32 << 20)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rt := newRetriever(t, reply(http.StatusOK, tt.answer))
			pr := retrieverPruner(rt, "gpt-4.1-mini", cache.NewMemory(1<<20, time.Hour), func(c *prune.Config, r *prune.RetrieverConfig) {
				c.UseHistory, c.Counter = false, counter
				r.MaxTokens = 4096
			})
			sent, out := rewrite(retrieverPipeline(pr), chat(body))
			if out.Status != tt.status || out.Reason != tt.reason {
				t.Errorf("%s %s, want %s %s", out.Status, out.Reason, tt.status, tt.reason)
			}
			if pruned := tt.status == focusgate.StatusPruned; pruned == bytes.Equal(sent, body) {
				t.Errorf("the pipeline returned %d bytes of the agent's %d; want them unchanged: %v", len(sent), len(body), !pruned)
			}

			calls := rt.Calls()
			if len(calls) != tt.calls {
				t.Fatalf("the retriever was called %d times, want %d", len(calls), tt.calls)
			}
			for _, c := range calls {
				//lint:ignore SA1019 the retriever sends max_tokens on purpose (prune/retriever.go says why).
				if n := c.MaxTokens; n != 4096 {
					t.Errorf("retriever call with max_tokens %d, want the cap 4096", n)
				}
			}
			if tt.calls < 2 {
				return
			}
			// The re-ask: the question, the unusable answer when there was
			// one, and a correction naming the range of line numbers.
			reask := calls[1].Messages
			correction := reask[len(reask)-1]
			if correction.Role != "user" || !strings.Contains(correction.Content, "from 1 to 1446") {
				t.Errorf("the re-ask ends with %s %q, want a correction naming lines 1 to 1446", correction.Role, correction.Content)
			}
			if tt.answer != "" && (len(reask) != 4 || reask[2].Role != "assistant" || reask[2].Content != tt.answer) {
				t.Errorf("the re-ask does not carry the unusable answer back: %d messages", len(reask))
			}
		})
	}
}
