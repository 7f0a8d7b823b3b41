// focusgate dashboard: a hash-routed page over /ui/api. Every value is put
// in the page as text (never as HTML): page text may contain anything.
"use strict";

const view = document.getElementById("view");
const POLL_MS = 2000;
let timer = null;

function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k === "class") el.className = v;
    else if (k === "text") el.textContent = v;
    else if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
    else el.setAttribute(k, v);
  }
  for (const c of children.flat(Infinity)) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

const svgNS = "http://www.w3.org/2000/svg";
function s(tag, attrs, ...children) {
  const el = document.createElementNS(svgNS, tag);
  for (const [k, v] of Object.entries(attrs || {})) el.setAttribute(k, v);
  for (const c of children) el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return el;
}

const fmtInt = (n) => Number(n || 0).toLocaleString("en-US");
const fmtPct = (x) => (100 * (x || 0)).toFixed(1) + "%";
const share = (n, d) => (d > 0 ? fmtPct(n / d) : "–");
const requestsN = (n) => fmtInt(n) + (n === 1 ? " request" : " requests");
function fmtUSD(v) {
  if (v === null || v === undefined) return "–";
  const a = Math.abs(v), sign = v < 0 ? "−" : "";
  return sign + "$" + (a >= 1 ? a.toFixed(2) : a.toFixed(4));
}
const fmtMs = (v) => (v === null || v === undefined ? "–" : Math.round(v).toLocaleString("en-US") + " ms");
function fmtTime(t) {
  const d = new Date(t);
  return d.toLocaleTimeString("en-GB", { hour12: false });
}
function statusText(st, reason) { return reason ? st + ": " + reason : st; }

// The secondary outcomes of a request: what else happened to it beyond its
// status, each a short phrase shown beside the status wherever it is shown.
const rescueText = { rescued: "context rescue: rescued", "still-too-long": "context rescue: still too long", "nothing-to-prune": "context rescue: nothing to prune" };
function secondary(r) {
  const out = [];
  if (r.rescue) out.push((rescueText[r.rescue] || "context rescue: " + r.rescue) + (r.rescued_early ? " (foreseen)" : ""));
  if (r.relook && r.reason !== "re-look") out.push("re-look");
  return out;
}
// statusCell is a request's status with its secondary outcomes after it,
// each in a badge of its own.
function statusCell(r, attrs) {
  const also = secondary(r);
  return h("td", Object.assign({ class: "st st-" + r.status }, attrs || {}),
    h("span", { class: "status", text: statusText(r.status, r.reason) }),
    also.map((a) => [" ", h("span", { class: "also", text: a })]));
}

async function getJSON(path) {
  const resp = await fetch(path, { credentials: "same-origin", cache: "no-store" });
  if (resp.status === 401) { location.href = "/ui"; throw new Error("unauthorized"); }
  if (!resp.ok) throw new Error((await resp.json().catch(() => ({}))).error || resp.statusText);
  return resp.json();
}

function setLive(ok) { document.getElementById("live").classList.toggle("stale", !ok); }
function setCapture(on) {
  const b = document.getElementById("capture");
  b.textContent = on ? "page text captured" : "page text not captured";
  b.title = on ? "FOCUSGATE_UI_CAPTURE=true: recent observations are kept in memory" : "FOCUSGATE_UI_CAPTURE=false: numbers and ranges only";
}

// ---- overview --------------------------------------------------------------

function stat(key, value, sub) {
  return h("div", { class: "stat", "data-k": key }, h("div", { class: "v", text: value }), h("div", { class: "k", text: labels[key] || key }), sub ? h("div", { class: "s", text: sub }) : null);
}
const labels = {
  requests: "requests inspected", pruned: "pruned", skipped: "skipped", failed_open: "failed open",
  tokens: "observation tokens before → after", reduction: "tokens removed", net_usd: "saved, net of retriever",
  cache: "cache hit rate", latency: "retriever p50 / p95", flagged: "injection lines flagged",
  relook: "re-look rate", rescues: "context-window rescues", arm_pruned: "conversations pruned", arm_holdout: "conversations held out (whole)",
};

function periodCard(title, id, p) {
  return h("section", { class: "card", id },
    h("h2", { text: title }),
    h("div", { class: "stats" },
      stat("requests", fmtInt(p.requests)),
      stat("pruned", share(p.pruned, p.requests), requestsN(p.pruned)),
      stat("skipped", share(p.skipped, p.requests), requestsN(p.skipped)),
      stat("failed_open", share(p.failed_open, p.requests), requestsN(p.failed_open)),
      stat("tokens", fmtInt(p.tokens_before) + " → " + fmtInt(p.tokens_after)),
      stat("reduction", fmtPct(p.reduction)),
      stat("net_usd", p.priced_requests ? fmtUSD(p.net_usd) : "–", p.priced_requests ? fmtUSD(p.saved_usd) + " saved − " + fmtUSD(p.retriever_usd) + " retriever" : "no priced requests"),
      stat("cache", (p.cache_hit + p.cache_miss + p.cache_shared) ? fmtPct(p.cache_hit_rate) : "–", fmtInt(p.cache_hit) + " hit · " + fmtInt(p.cache_miss) + " miss · " + fmtInt(p.cache_shared) + " shared"),
      stat("latency", fmtMs(p.retriever_p50_ms) + " / " + fmtMs(p.retriever_p95_ms)),
      stat("flagged", fmtInt(p.flagged)),
      stat("relook", p.relook_rate == null ? "–" : fmtPct(p.relook_rate), fmtInt(p.relooks) + " re-looks · " + fmtInt(p.pruned_pages) + " pages pruned"),
      stat("rescues", fmtInt(p.rescued), fmtInt(p.still_too_long) + " still too long · " + fmtInt(p.nothing_to_prune) + " nothing to prune"),
    ),
    p.reasons.length ? h("ul", { class: "reasons" }, p.reasons.map((r) => h("li", { class: "reason st-" + r.status, text: statusText(r.status, r.reason) + " × " + r.count }))) : null,
  );
}

function chart(series) {
  const W = 600, H = 170, L = 34, B = 18, T = 8, n = series.length, bw = (W - L) / n;
  const maxReq = Math.max(1, ...series.map((p) => p.requests));
  const maxTok = Math.max(1, ...series.map((p) => p.tokens_before));
  const svg = s("svg", { viewBox: `0 0 ${W} ${H}`, role: "img", "aria-label": "requests and tokens per minute, last hour", id: "chart-svg" });
  const y = (v, m) => T + (H - B - T) * (1 - v / m);
  svg.append(s("line", { x1: L, x2: W, y1: H - B, y2: H - B, stroke: "currentColor", "stroke-opacity": ".3" }));
  svg.append(s("text", { x: L - 4, y: T + 8, "text-anchor": "end", class: "axis" }, String(maxReq)));
  svg.append(s("text", { x: L - 4, y: H - B, "text-anchor": "end", class: "axis" }, "0"));
  svg.append(s("text", { x: L, y: H - 4, class: "axis" }, "−60 min"));
  svg.append(s("text", { x: W, y: H - 4, "text-anchor": "end", class: "axis" }, "now"));
  series.forEach((p, i) => {
    let base = H - B;
    for (const [k, color] of [["pruned", "var(--pruned)"], ["failed_open", "var(--failed)"], ["skipped", "var(--skipped)"]]) {
      if (!p[k]) continue;
      const hgt = (H - B - T) * p[k] / maxReq;
      base -= hgt;
      const r = s("rect", { x: L + i * bw + 1, y: base, width: Math.max(1, bw - 2), height: hgt, fill: color, class: "bar bar-" + k });
      r.append(s("title", {}, `${fmtTime(p.t)}: ${p[k]} ${k.replace("_", " ")}`));
      svg.append(r);
    }
  });
  for (const [k, color, dash] of [["tokens_before", "var(--muted)", "4 3"], ["tokens_after", "var(--focus)", ""]]) {
    const pts = series.map((p, i) => `${(L + (i + 0.5) * bw).toFixed(1)},${y(p[k], maxTok).toFixed(1)}`).join(" ");
    svg.append(s("polyline", { points: pts, fill: "none", stroke: color, "stroke-width": "1.5", "stroke-dasharray": dash, class: "line-" + k }));
  }
  return h("section", { class: "card chart", id: "chart" },
    h("h2", { text: "Last hour, per minute" }), svg,
    h("div", { class: "legend" },
      h("i", { class: "sw-pruned" }), "pruned",
      h("i", { class: "sw-failed" }), "failed open",
      h("i", { class: "sw-skipped" }), "skipped (bars: requests, up to " + maxReq + ")",
      h("i", { class: "sw-before" }), "tokens before",
      h("i", { class: "sw-after" }), "tokens after (lines: up to " + fmtInt(maxTok) + ")"));
}

function breakdown(title, id, rows) {
  return h("section", { id },
    h("h2", { text: title }),
    h("div", { class: "tablewrap" }, h("table", {},
      h("thead", {}, h("tr", {}, ["name", "requests", "pruned", "failed open", "tokens before → after", "removed", "saved (net)", "re-look rate"].map((c, i) => h("th", { class: i ? "num" : "", text: c })))),
      h("tbody", {}, rows.map((r) => h("tr", {},
        h("td", r.name === "(none)" ? { text: r.name, title: "requests whose outcome named no action model" } : { text: r.name }),
        h("td", { class: "num", text: fmtInt(r.requests) }), h("td", { class: "num", text: fmtInt(r.pruned) }),
        h("td", { class: "num", text: fmtInt(r.failed_open) }), h("td", { class: "num", text: fmtInt(r.tokens_before) + " → " + fmtInt(r.tokens_after) }),
        h("td", { class: "num", text: fmtPct(r.reduction) }), h("td", { class: "num", text: fmtUSD(r.net_usd) }),
        h("td", { class: "num", title: `${r.relooks} re-looks after ${r.pruned_pages} pruned pages`, text: r.relook_rate == null ? "–" : fmtPct(r.relook_rate) })))))));
}

// ---- holdout ------------------------------------------------------------------

// fmtFigure writes one compared figure in its own unit.
function fmtFigure(name, v) {
  if (v === null || v === undefined) return "–";
  switch (name) {
    case "usd": return fmtUSD(v);
    case "repeat_share": return fmtPct(v);
    case "steps": case "errors": return v.toFixed(2);
    default: return fmtInt(Math.round(v));
  }
}
function fmtDiff(name, v) { return (v > 0 ? "+" : v < 0 ? "−" : "") + fmtFigure(name, Math.abs(v)); }

// MAX_RELATIVE bounds the relative differences shown: past ±1000% the
// ratio says more about how near zero the holdout's value is than about
// pruning, and the absolute difference beside it is what to read.
const MAX_RELATIVE = 10;

// relativeShown says whether a figure's relative difference means
// something: its base, the holdout's value, must not round to zero in its
// own unit, nor make the ratio explode.
function relativeShown(m) {
  return m.relative != null && fmtFigure(m.name, Math.abs(m.holdout)) !== fmtFigure(m.name, 0) && Math.abs(m.relative) <= MAX_RELATIVE;
}
function relativeText(m) {
  if (m.relative == null && m.n[1] === 0) return "";
  if (!relativeShown(m)) return " (—)";
  return ` (${m.relative > 0 ? "+" : m.relative < 0 ? "−" : ""}${fmtPct(Math.abs(m.relative))})`;
}
function relativeTitle(m) {
  return relativeShown(m) ? "pruned minus holdout, and relative to the holdout's value"
    : "pruned minus holdout; no relative difference: the holdout's value is zero or too close to it";
}

const verdicts = {
  lower: "pruning lowers it", higher: "pruning raises it",
  unclear: "not yet clear", "too few": "too few conversations",
};

function verdictText(m) {
  let t = verdicts[m.verdict] || m.verdict;
  if (m.verdict === "unclear") t += m.more >= 0 ? ` · about ${fmtInt(m.more)} more conversations` : " · no difference so far";
  return t;
}

function comparisonTable(id, metrics) {
  return h("div", { class: "tablewrap" }, h("table", { id, class: "compare" },
    h("thead", {}, h("tr", {}, ["figure", "pruned", "holdout (whole)", "difference", "95% interval", "verdict"].map((c, i) => h("th", { class: i && i < 5 ? "num" : "", text: c })))),
    h("tbody", {}, metrics.map((m) => h("tr", { "data-metric": m.name, class: "v-" + m.verdict.replace(" ", "-") },
      h("td", { text: m.label }),
      h("td", { class: "num", text: m.n[0] ? fmtFigure(m.name, m.pruned) : "–" }),
      h("td", { class: "num", text: m.n[1] ? fmtFigure(m.name, m.holdout) : "–" }),
      h("td", { class: "num diff", title: relativeTitle(m) }, fmtDiff(m.name, m.diff), h("span", { class: "rel", text: relativeText(m) })),
      h("td", { class: "num", text: m.verdict === "too few" ? "–" : fmtDiff(m.name, m.low) + " … " + fmtDiff(m.name, m.high) }),
      h("td", { class: "verdict", text: verdictText(m) }))))));
}

function holdoutCard(r) {
  const [pruned, held] = r.arms;
  const groups = (title, id, list) => list.length ? h("div", { id },
    h("h3", { text: title }),
    list.map((g) => h("details", { class: "group", "data-name": g.name },
      h("summary", { text: `${g.name}: ${fmtInt(g.conversations[0])} pruned · ${fmtInt(g.conversations[1])} whole` }),
      comparisonTable(id + "-" + g.name, g.metrics)))) : null;
  return h("section", { class: "card", id: "holdout" },
    h("h2", { text: "Pruned and whole conversations side by side" }),
    h("p", { class: "muted", id: "holdout-note", text: `${fmtPct(r.share)} of conversations are held out (FOCUSGATE_HOLDOUT): sent whole, at full price. ` +
      "Their column is what the same traffic costs without pruning; savings elsewhere on this page are the pruned arm's only. " +
      "A conversation counts once it has gone quiet; differences are pruned minus holdout, per conversation." }),
    r.note ? h("p", { class: "muted", id: "holdout-scope", "data-scope": r.scope, text: r.note }) : null,
    h("div", { class: "stats" },
      stat("arm_pruned", fmtInt(pruned.conversations), fmtInt(pruned.steps) + " steps"),
      stat("arm_holdout", fmtInt(held.conversations), fmtInt(held.steps) + " steps")),
    comparisonTable("holdout-all", r.metrics),
    groups("By action model", "holdout-models", r.by_model || []),
    groups("By agent", "holdout-agents", r.by_agent || []));
}

async function showOverview() {
  const o = await getJSON("/ui/api/overview");
  setCapture(o.capture);
  return [
    h("h1", { text: "Overview" }),
    h("p", { class: "muted", text: `Since ${new Date(o.started).toLocaleString("en-GB")} · ${fmtInt(o.ring.requests)} recent requests in memory (${(o.ring.bytes / 1048576).toFixed(1)} of ${(o.ring.max_bytes / 1048576).toFixed(0)} MiB, at most ${fmtInt(o.ring.max_requests)})` }),
    h("div", { class: "periods" }, periodCard("Since start", "total", o.total), periodCard("Last hour", "hour", o.hour)),
    o.holdout ? holdoutCard(o.holdout) : null,
    chart(o.series),
    breakdown("By action model", "models", o.models),
    o.keys.length ? breakdown("By gateway key", "keys", o.keys) : null,
    o.formats.length ? breakdown("By page format", "formats", o.formats) : null,
  ];
}

// ---- recent requests ---------------------------------------------------------

const statuses = ["", "pruned", "skipped", "failed-open"];

async function showRequests(params) {
  const status = params.get("status") || "";
  const data = await getJSON("/ui/api/requests" + (status ? "?status=" + encodeURIComponent(status) : ""));
  setCapture(data.capture);
  const rows = data.requests.map((r) => h("tr", { class: "link", "data-id": r.id, onclick: () => { location.hash = "#/requests/" + r.id; } },
    h("td", { text: fmtTime(r.time) }), h("td", { text: r.provider ? r.route + " · " + r.provider : r.route }), h("td", { text: r.model }),
    statusCell(r),
    h("td", { class: "num", text: r.observations }),
    h("td", { class: "num", text: fmtInt(r.tokens_before) + " → " + fmtInt(r.tokens_after) }),
    h("td", { text: r.cache || "–" }), h("td", { class: "num", text: r.cache && r.cache !== "hit" ? fmtInt(r.retriever_ms) : "–" }),
    h("td", { class: "num", text: r.flagged || "" }),
    h("td", { class: "num", text: r.priced ? fmtUSD(r.net_usd) : "–" }),
    h("td", { text: r.key || "" })));
  return [
    h("h1", { text: "Recent requests" }),
    h("div", { class: "filters" }, statuses.map((st) => h("button", { class: st === status ? "on" : "", "data-status": st || "all", onclick: () => { location.hash = "#/requests" + (st ? "?status=" + st : ""); } }, st || "all"))),
    h("div", { class: "tablewrap" }, h("table", { id: "requests" },
      h("thead", {}, h("tr", {}, ["time", "route", "model", "status", "obs.", "tokens before → after", "cache", "retriever ms", "flagged", "saved", "key"].map((c) => h("th", { class: ["obs.", "tokens before → after", "retriever ms", "flagged", "saved"].includes(c) ? "num" : "", text: c })))),
      h("tbody", {}, rows))),
    rows.length ? null : h("p", { class: "muted", id: "empty", text: "No requests yet" + (status ? " with status " + status : "") + "." }),
  ];
}

// ---- one request -------------------------------------------------------------

function fact(k, v, cls) {
  return h("div", { class: cls }, h("b", { text: k }), v instanceof Node ? v : v === "" || v === null || v === undefined ? "–" : String(v));
}
const fmtRange = (r) => (r.from === r.to ? String(r.from) : r.from + "–" + r.to);

// LIST_CAP is how many items of a long list of line ranges or numbers show
// before "… N more": a page can have hundreds, and the facts must stay a
// few lines tall.
const LIST_CAP = 24;

// compactList writes items (texts or elements) as one wrapped line, the
// first cap of them, then a button that shows the rest.
function compactList(id, items, none, cap) {
  cap = cap || LIST_CAP;
  if (!items || !items.length) return h("span", { id, class: "inline-list", text: none });
  const el = h("span", { id, class: "inline-list", "data-count": items.length });
  const fill = (all) => {
    const shown = all ? items : items.slice(0, cap);
    el.replaceChildren(...shown.flatMap((item, k) => (k ? [item instanceof Node ? " " : ", ", item] : [item])));
    if (shown.length < items.length) {
      el.append(" ", h("button", { class: "more", type: "button", onclick: () => fill(true), text: `… ${fmtInt(items.length - shown.length)} more` }));
    }
  };
  fill(false);
  return el;
}

function line(no, text, kind, focused) {
  return h("span", { class: "ln " + kind + (focused ? " focused" : ""), "data-line": no }, h("span", { class: "no", text: no }), text);
}

function annotated(p) {
  const out = h("div", { class: "obs", id: "annotated" });
  for (const seg of p.segments) {
    const lines = [];
    for (let n = seg.from; n <= seg.to; n++) lines.push(line(n, seg.text ? seg.text[n - seg.from] : "", seg.kind, n === p.focused_line));
    if (seg.kind === "pruned") {
      const count = seg.to - seg.from + 1;
      out.append(h("details", { class: "run" }, h("summary", { text: `… ${count} line${count === 1 ? "" : "s"} pruned (${seg.from}–${seg.to})` }), lines));
    } else out.append(...lines);
  }
  return out;
}

// segmentList is the observation's runs of kept, pruned and flagged lines
// when its text was not captured: one wrapped line of coloured ranges, capped
// like the other lists, since a page can alternate hundreds of times.
function segmentList(p, i) {
  const focused = (seg) => p.focused_line >= seg.from && p.focused_line <= seg.to;
  const runs = p.segments.map((seg) => h("span", {
    class: "seg seg-" + seg.kind + (focused(seg) ? " focused" : ""),
    title: `lines ${fmtRange(seg)}: ${seg.kind}` + (focused(seg) ? ` (focused element on line ${p.focused_line})` : ""),
    text: fmtRange(seg),
  }));
  return h("div", { class: "seglist" },
    h("div", { class: "key-legend" }, ["kept", "pruned", "flagged"].map((k) => h("span", { class: "seg seg-" + k, text: k })),
      h("span", { class: "seg focused", text: "holds the focused element" })),
    compactList("segments-" + i, runs, "none", 4 * LIST_CAP));
}

// wide gives a list of more than a few items the facts' whole width, where
// it wraps as a paragraph; a short one stays in its cell.
const wide = (items) => (items.length > 4 ? "wide" : null);

function page(p, i, captured) {
  return h("section", { class: "card page", id: "page-" + i },
    h("h2", { text: `Observation ${i + 1}: ${p.format}` }),
    h("div", { class: "facts" },
      fact("status", statusText(p.status, p.reason)), fact("format", p.format),
      fact("tokens before → after", fmtInt(p.tokens_before) + " → " + fmtInt(p.tokens_after)),
      fact("cache", p.cache), fact("retriever", p.cache && p.cache !== "hit" ? fmtInt(p.retriever_ms) + " ms" : "–"),
      fact("lines", p.lines), fact("focused element", p.focused_line ? "line " + p.focused_line : "none"),
      fact("retriever ranges", compactList("ranges-" + i, p.ranges.map(fmtRange), "none"), wide(p.ranges)),
      fact("kept verbatim", p.status === "pruned" ? compactList("kept-" + i, p.kept.map(fmtRange), "none") : "all", wide(p.status === "pruned" ? p.kept : [])),
      fact("flagged as injection", compactList("flagged-" + i, p.flagged.map(String), "none"), wide(p.flagged))),
    captured ? [
      h("h3", { text: "Goal given to the retriever" }), h("pre", { class: "prose", id: "goal-" + i, text: p.goal || "(none)" }),
      h("h3", { text: "History of earlier steps", title: "sent to the retriever unless FOCUSGATE_RETRIEVER_HISTORY=false" }), h("pre", { class: "prose", text: p.history || "(none)" }),
      h("h3", { text: "Retriever's reasoning" }), h("pre", { class: "prose", id: "reasoning-" + i, text: p.reasoning || (p.cache === "hit" ? "(a cache hit: the selection was made for an earlier request)" : "(none)") }),
      h("div", { class: "panes" },
        h("div", { class: "pane" }, h("h3", { text: "Original, annotated" }),
          h("div", { class: "key-legend" },
            h("span", { class: "ln kept" }, "kept"), h("span", { text: "▸ pruned run (click to open)" }),
            h("span", { class: "ln flagged" }, h("span", { class: "no" }), "flagged as injection, removed"),
            h("span", { class: "ln focused" }, h("span", { class: "no" }), "focused element")),
          annotated(p)),
        h("div", { class: "pane" }, h("h3", { text: "As the action model received it" }), h("pre", { class: "text", id: "forwarded-" + i, text: p.forwarded }))),
    ] : [h("h3", { text: "Lines" }), segmentList(p, i)]);
}

async function showRequest(id) {
  const d = await getJSON("/ui/api/requests/" + encodeURIComponent(id));
  return [
    h("p", {}, h("a", { href: "#/requests", text: "← recent requests" })),
    h("h1", { text: `Request ${d.id} · ${d.route}${d.provider ? " · " + d.provider : ""} · ${d.model || "(no model named)"}` }),
    h("div", { class: "card facts", id: "facts" },
      fact("time", new Date(d.time).toLocaleString("en-GB")),
      h("div", { id: "status" }, h("b", { text: "status" }), h("span", { class: "st st-" + d.status, text: statusText(d.status, d.reason) }),
        secondary(d).map((a) => [" ", h("span", { class: "also", text: a })])),
      fact("mode / prompt", (d.mode || "–") + " / " + (d.prompt || "–")), fact("key", d.key),
      fact("tokens before → after", fmtInt(d.tokens_before) + " → " + fmtInt(d.tokens_after)),
      fact("cache", d.cache), fact("retriever", d.cache && d.cache !== "hit" ? fmtInt(d.retriever_ms) + " ms" : "–"),
      fact("flagged lines", d.flagged),
      d.older.reapplied + d.older.pruned + d.older.left ? fact("older pages", `${fmtInt(d.older.reapplied)} re-applied · ${fmtInt(d.older.pruned)} pruned anew · ${fmtInt(d.older.left)} left as they came`) : null,
      fact("saved (net)", d.priced ? fmtUSD(d.net_usd) + " = " + fmtUSD(d.saved_usd) + " − " + fmtUSD(d.retriever_usd) : "–")),
    d.captured ? null : h("p", { class: "notice", id: "no-text", text: d.text_dropped
      ? "This request's page text did not fit in the dashboard's memory bound (FOCUSGATE_UI_MAX_BYTES): numbers and ranges only."
      : "Page text is not captured (FOCUSGATE_UI_CAPTURE=false): numbers and ranges only." }),
    d.pages.length ? d.pages.map((p, i) => page(p, i, d.captured)) : h("p", { class: "muted", text: "No observation was considered for this request." }),
  ];
}

// ---- routing -----------------------------------------------------------------

// generation counts renders, so that a poll answered after the reader moved
// on is dropped instead of replacing the page they went to.
let generation = 0;

async function render(poll) {
  clearTimeout(timer);
  const mine = ++generation;
  const [path, query] = (location.hash.slice(1) || "/").split("?");
  const params = new URLSearchParams(query || "");
  const m = path.match(/^\/requests\/(\d+)$/);
  document.querySelectorAll("[data-nav]").forEach((a) => a.classList.toggle("active", a.dataset.nav === (path.startsWith("/requests") ? "requests" : "overview")));
  try {
    const nodes = m ? await showRequest(m[1]) : path.startsWith("/requests") ? await showRequests(params) : await showOverview();
    if (mine !== generation) return;
    view.replaceChildren(...nodes.flat().filter((n) => n));
    setLive(true);
  } catch (e) {
    if (mine !== generation) return;
    setLive(false);
    if (!poll) view.replaceChildren(h("p", { class: "notice", text: "Could not load: " + e.message }));
  }
  // A request's page does not change; the overview and the table do.
  if (!m) timer = setTimeout(() => render(true), document.hidden ? 5 * POLL_MS : POLL_MS);
}

window.addEventListener("hashchange", () => render(false));
render(false);
