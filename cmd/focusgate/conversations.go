package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/focusgate/focusgate"
	"github.com/focusgate/focusgate/holdout"
)

// compareConversations is `focusgate eval --conversations`: the comparison
// of the dashboard's holdout card, from the conversation lines of an
// exported gateway log, so that a team can look at a week of traffic
// offline.
func compareConversations(name string, asJSON bool, stdout, stderr io.Writer) error {
	f, err := os.Open(name)
	if err != nil {
		return err
	}
	defer f.Close()
	tally := holdout.NewTally(0)
	n, err := holdout.ReadLog(f, tally)
	if err != nil {
		return fmt.Errorf("reading %s: %w", name, err)
	}
	if n == 0 {
		return fmt.Errorf("no conversation lines (msg=%s) in %s: the gateway writes them with FOCUSGATE_HOLDOUT above 0", holdout.LogMessage, name)
	}
	r := tally.Report()
	// The log says which arm each conversation was in, not the share
	// configured: the share observed stands in for it.
	r.Share = float64(r.Arms[1].Conversations) / float64(n)
	if asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(r)
	}
	if err := writeComparison(stdout, r); err != nil {
		return err
	}
	fmt.Fprintf(stderr, "focusgate eval: %d conversations from %s\n", n, name)
	return nil
}

// writeComparison prints a report as tables: all conversations, then each
// model and agent with enough of them.
func writeComparison(w io.Writer, r focusgate.HoldoutReport) error {
	pruned, held := r.Arms[0], r.Arms[1]
	fmt.Fprintf(w, "conversations: %d pruned (%d steps), %d held out and sent whole (%d steps): %.1f%% held out\n",
		pruned.Conversations, pruned.Steps, held.Conversations, held.Steps, 100*r.Share)
	fmt.Fprintln(w, "per conversation, pruned minus holdout, with its 95% interval; the holdout is what the same traffic costs unpruned")
	fmt.Fprintln(w)
	if err := writeMetrics(w, r.Metrics); err != nil {
		return err
	}
	for _, g := range []struct {
		title  string
		groups []focusgate.Group
	}{{"action model", r.ByModel}, {"agent", r.ByAgent}} {
		for _, grp := range g.groups {
			fmt.Fprintf(w, "\n%s %s: %d pruned, %d held out\n", g.title, grp.Name, grp.Conversations[0], grp.Conversations[1])
			if err := writeMetrics(w, grp.Metrics); err != nil {
				return err
			}
		}
	}
	return nil
}

func writeMetrics(w io.Writer, metrics []focusgate.Comparison) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "figure\tpruned\tholdout\tdifference\t95% interval\tverdict\t")
	for _, m := range metrics {
		interval := "–"
		if m.Verdict != "too few" {
			interval = figure(m.Name, m.Low) + " … " + figure(m.Name, m.High)
		}
		verdict := m.Verdict
		switch {
		case m.Verdict == "lower" || m.Verdict == "higher":
			verdict = "pruning: " + m.Verdict
		case m.Verdict == "unclear" && m.More >= 0:
			verdict = "unclear: about " + strconv.Itoa(m.More) + " more conversations"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t\n", m.Label, figure(m.Name, m.Pruned), figure(m.Name, m.Holdout), figure(m.Name, m.Diff), interval, verdict)
	}
	return tw.Flush()
}

// figure writes one compared value in its unit.
func figure(name string, v float64) string {
	switch name {
	case "usd":
		if v < 0 {
			return "-$" + strconv.FormatFloat(-v, 'f', 4, 64)
		}
		return "$" + strconv.FormatFloat(v, 'f', 4, 64)
	case "repeat_share":
		return strconv.FormatFloat(100*v, 'f', 1, 64) + "%"
	case "steps", "errors":
		return strconv.FormatFloat(v, 'f', 2, 64)
	}
	return strings.TrimSuffix(strconv.FormatFloat(v, 'f', 0, 64), ".")
}
