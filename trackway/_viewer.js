// The trackway trace viewer: reads the JSON document in #data and shows it. Every recorded
// value is put on the page with textContent, never as markup.
"use strict";
(function () {
  const D = JSON.parse(document.getElementById("data").textContent);
  const C = D.commits;
  const ROW = 22;
  const CHECKPOINT = 256;
  const $ = (id) => document.getElementById(id);
  const el = (tag, cls, text) => {
    const node = document.createElement(tag);
    if (cls) node.className = cls;
    if (text !== undefined) node.textContent = text;
    return node;
  };

  // -- the run's state after the first k commits (the run's own frame) ------------------
  const cache = new Map([[0, D.initial]]);
  function fold(state, commit, owned) {
    if (commit.frame !== "") return;
    for (const op of commit.ops) {
      const old = state[op.key];
      if (op.kind === "set") state[op.key] = op.value;
      else if (op.kind === "delete") delete state[op.key];
      else if (op.kind === "append") {
        if (Array.isArray(old) && owned.has(old)) old.push(...op.value);
        else {
          const grown = (Array.isArray(old) ? old : []).concat(op.value);
          owned.add(grown);
          state[op.key] = grown;
        }
      } else state[op.key] = Object.assign({}, old && typeof old === "object" ? old : {}, op.value);
    }
  }
  function stateAt(k) {
    let from = Math.floor(k / CHECKPOINT) * CHECKPOINT;
    while (!cache.has(from)) from -= CHECKPOINT;
    const state = Object.assign({}, cache.get(from));
    let owned = new Set();
    for (let i = from; i < k; i++) {
      fold(state, C[i], owned);
      if ((i + 1) % CHECKPOINT === 0 && !cache.has(i + 1)) {
        cache.set(i + 1, Object.assign({}, state));
        owned = new Set(); // the checkpoint shares these arrays now
      }
    }
    return state;
  }

  // -- values, cut with a marker that says how much is left out ------------------------
  const LIMIT = 1500;
  function valueNode(value, raw) {
    const text = value === undefined ? "(absent)"
      : raw && typeof value === "string" ? value : JSON.stringify(value, null, 2);
    const node = el("div", "value", text.length > LIMIT ? text.slice(0, LIMIT) : text);
    if (text.length > LIMIT) {
      const more = el("button", "more", ` … ${text.length - LIMIT} more characters (show all)`);
      more.onclick = () => { node.textContent = text; };
      node.appendChild(more);
    }
    return node;
  }

  // -- header ---------------------------------------------------------------------------
  const run = D.run;
  $("title").textContent = run.chart_name;
  const meta = $("meta");
  meta.appendChild(el("span", "", `run ${run.run_id} · `));
  meta.appendChild(el("span", `status-${run.status}`, run.status));
  meta.appendChild(el("span", "", ` · ${C.length} commits · ${D.calls.length} model calls` +
    (D.source ? ` · ${D.source}` : "") + (run.error ? ` · ${run.error[0]}: ${run.error[1]}` : "")));
  $("commit-count").textContent = `(${C.length})`;
  $("calls-tab").textContent = `Model calls (${D.calls.length})`;
  $("chart-note").textContent = {
    log: "No chart structure was recorded: drawn from the log (top-level stages in the order they ran).",
    checkpoint: "Drawn from the structure the run's checkpoint recorded; a stage the run never reached is shown by its id.",
    chart: "Drawn from the chart given with --chart.",
  }[D.chart.source] || "";

  // -- the timeline: a virtual list, only the rows in view are in the page ---------------
  let shown = C.map((_, i) => i);
  let current = -1;
  const timeline = $("timeline");
  const rows = $("timeline-rows");
  const spacer = $("timeline-spacer");
  function rowText(c) {
    const writes = c.ops.map((op) => `${op.kind} ${op.key}`).join(", ") || "no writes";
    return { path: c.stage_path, rest: ` ${c.outcome === "ok" ? "" : c.outcome + " "}· ${writes}` };
  }
  function paint() {
    spacer.style.height = `${shown.length * ROW}px`;
    const first = Math.max(0, Math.floor(timeline.scrollTop / ROW) - 10);
    const last = Math.min(shown.length, first + Math.ceil(timeline.clientHeight / ROW) + 20);
    rows.style.top = `${first * ROW}px`;
    rows.replaceChildren();
    for (let j = first; j < last; j++) {
      const i = shown[j];
      const c = C[i];
      const row = el("div", i === current ? "row on" : "row");
      row.dataset.seq = c.seq;
      row.appendChild(el("span", "seq", String(c.seq)));
      if (c.member) row.appendChild(el("span", "member", `[${c.member}] `));
      const t = rowText(c);
      row.appendChild(el("span", "", t.path));
      row.appendChild(el("span", c.outcome === "ok" ? "" : "bad", t.rest));
      row.onclick = () => select(i);
      rows.appendChild(row);
    }
  }
  timeline.addEventListener("scroll", paint);
  window.addEventListener("resize", paint);
  function refilter() {
    const q = $("filter").value.trim().toLowerCase();
    shown = [];
    for (let i = 0; i < C.length; i++) {
      const c = C[i];
      const hay = q && `${c.stage_path} ${c.stage_name} ${c.outcome} ${c.member} ` +
        c.ops.map((op) => op.key).join(" ") + " " + c.reads.join(" ");
      if (!q || hay.toLowerCase().includes(q)) shown.push(i);
    }
    paint();
  }
  $("filter").addEventListener("input", refilter);
  timeline.addEventListener("keydown", (e) => {
    const at = shown.indexOf(current);
    if (e.key === "ArrowDown" && at < shown.length - 1) select(shown[at + 1]);
    else if (e.key === "ArrowUp" && at > 0) select(shown[at - 1]);
    else return;
    e.preventDefault();
  });
  function reveal(i) {
    const j = shown.indexOf(i);
    if (j < 0) return;
    const top = j * ROW;
    if (top < timeline.scrollTop || top + ROW > timeline.scrollTop + timeline.clientHeight) {
      timeline.scrollTop = Math.max(0, top - timeline.clientHeight / 2);
    }
  }

  // -- the chart: the node of the selected commit; a click selects a node's commits -----
  const nodeCommits = new Map();
  C.forEach((c, i) => {
    if (c.node) (nodeCommits.get(c.node) || nodeCommits.set(c.node, []).get(c.node)).push(i);
  });
  for (const g of document.querySelectorAll("svg.chart .node")) {
    const pick = () => {
      const list = nodeCommits.get(g.dataset.node) || [];
      if (!list.length) return;
      const next = list.find((i) => i > current);
      select(next === undefined ? list[0] : next);
    };
    g.addEventListener("click", pick);
    g.addEventListener("keydown", (e) => { if (e.key === "Enter") pick(); });
  }

  // -- the selected commit ----------------------------------------------------------------
  function fact(dl, name, value) {
    if (value === undefined || value === null || value === "") return;
    dl.appendChild(el("dt", "", name));
    dl.appendChild(el("dd", "", typeof value === "string" ? value : JSON.stringify(value)));
  }
  function select(i) {
    current = i;
    const c = C[i];
    showTab("commit");
    $("commit-title").textContent = `Commit ${c.seq}: ${c.stage_name}`;
    const facts = $("commit-facts");
    facts.replaceChildren();
    fact(facts, "stage path", c.stage_path);
    fact(facts, "kind", c.kind);
    fact(facts, "outcome", c.outcome);
    fact(facts, "frame", c.frame || "(the run's state)");
    fact(facts, "member", c.member);
    fact(facts, "reads", c.reads.length ? c.reads.join(", ") : "nothing");
    fact(facts, "took", `${((c.ended_at - c.started_at) * 1000).toFixed(2)} ms`);
    if (c.attempts > 1) fact(facts, "attempts", String(c.attempts));
    if (c.error) fact(facts, "error", `${c.error[0]}: ${c.error[1]}`);
    if (c.detail) fact(facts, "detail", c.detail);
    if (c.events.length) fact(facts, "events", c.events);
    const writes = $("commit-writes");
    writes.replaceChildren();
    if (!c.ops.length) writes.appendChild(el("p", "note", "no writes"));
    for (const op of c.ops) {
      const kv = el("div", "kv");
      kv.appendChild(el("span", "key", `${op.kind} ${op.key}`));
      kv.appendChild(op.kind === "delete" ? el("span", "value", "") : valueNode(op.value));
      writes.appendChild(kv);
    }
    showState(i);
    for (const g of document.querySelectorAll("svg.chart .node")) {
      g.classList.toggle("current", g.dataset.node === c.node);
    }
    reveal(i);
    paint();
  }
  function showState(i) {
    const c = C[i];
    const before = stateAt(i);
    const after = stateAt(i + 1);
    $("state-title").textContent = `State after commit ${c.seq}`;
    $("state-note").textContent = c.frame === ""
      ? "Marked: what this commit changed, against the state after the commit before."
      : `This commit wrote to its own frame (${c.frame}): the run's state changes when that frame is merged or its output is written.`;
    const box = $("state");
    box.replaceChildren();
    const touched = new Set(c.frame === "" ? c.ops.map((op) => op.key) : []);
    const keys = Object.keys(after);
    for (const k of Object.keys(before)) if (!(k in after)) keys.push(k);
    keys.sort((a, b) => (touched.has(b) - touched.has(a)) || a.localeCompare(b));
    for (const k of keys) {
      let mark = "";
      if (touched.has(k)) mark = !(k in after) ? "removed" : !(k in before) ? "added" : "changed";
      const kv = el("div", `kv ${mark}`);
      kv.dataset.key = k;
      kv.dataset.change = mark || "same";
      kv.appendChild(el("span", "key", k));
      const cell = el("div");
      cell.appendChild(valueNode(k in after ? after[k] : before[k]));
      if (mark === "changed") {
        const was = el("div", "was", "was: ");
        was.appendChild(valueNode(before[k]));
        cell.appendChild(was);
      }
      kv.appendChild(cell);
      box.appendChild(kv);
    }
  }

  // -- narrative ----------------------------------------------------------------------------
  const firstAt = new Map();
  C.forEach((c, i) => { if (!firstAt.has(c.stage_path)) firstAt.set(c.stage_path, i); });
  function commitOfPath(path) {
    if (firstAt.has(path)) return firstAt.get(path);
    const i = C.findIndex((c) => c.stage_path.startsWith(path + "/"));
    return i < 0 ? undefined : i;
  }
  const story = $("narrative");
  D.narrative.forEach((line) => {
    const li = el("li", "", line.text);
    li.onclick = () => {
      const i = commitOfPath(line.path);
      if (i !== undefined) select(i);
    };
    story.appendChild(li);
  });

  // -- model calls, grouped by member -------------------------------------------------------
  const list = $("call-list");
  if (!D.calls.length) list.appendChild(el("p", "note", "This run made no model calls."));
  let lastMember = null;
  D.calls.forEach((call, n) => {
    if (call.member !== lastMember && (call.member || lastMember !== null)) {
      const depth = call.member ? call.member.split(".").length - 1 : 0;
      const head = el("div", "member-head", call.member ? `member ${call.member}` : "the agent");
      head.style.marginLeft = `${depth * 2}ch`;
      list.appendChild(head);
    }
    lastMember = call.member;
    const depth = call.member ? call.member.split(".").length : 0;
    const row = el("div", "call", `call ${call.k} · commit ${call.seq} · ` +
      (call.match ? "match" : "MISMATCH"));
    row.style.marginLeft = `${depth * 2}ch`;
    row.dataset.k = call.k;
    row.onclick = () => showCall(n);
    list.appendChild(row);
  });
  function showCall(n) {
    const call = D.calls[n];
    for (const r of list.querySelectorAll(".call")) r.classList.toggle("on", r.dataset.k === String(call.k));
    $("call-title").textContent = `Model call ${call.k}` + (call.member ? ` (member ${call.member})` : "");
    const facts = $("call-facts");
    facts.replaceChildren();
    fact(facts, "request sha256", call.hash || "(not rebuilt)");
    fact(facts, "receipt sha256", call.receipt.request_hash);
    const verdict = el("dd");
    verdict.appendChild(el("span", call.match ? "badge match" : "badge mismatch",
      call.match ? "match: the request rebuilt from the log is the one sent" : "MISMATCH"));
    facts.appendChild(el("dt", "", "check"));
    facts.appendChild(verdict);
    if (call.problem) fact(facts, "could not rebuild", call.problem);
    fact(facts, "at commit", String(call.seq));
    if ("usage" in call.receipt) fact(facts, "usage", call.receipt.usage === null ? "not reported by the provider" : call.receipt.usage);
    fact(facts, "via", call.receipt.via);
    const goto = el("button", "more", "select its commit");
    goto.onclick = () => select(call.seq - 1);
    facts.appendChild(el("dt", "", ""));
    const dd = el("dd");
    dd.appendChild(goto);
    facts.appendChild(dd);
    const messages = $("call-messages");
    messages.replaceChildren();
    for (const m of (call.request && call.request.messages) || []) {
      const box = el("div", "msg");
      box.appendChild(el("div", "role", m.role + (m.tool_call_id ? ` · ${m.tool_call_id}` : "")));
      const content = m.content;
      box.appendChild(valueNode(content, true));
      if (m.tool_calls) box.appendChild(valueNode(m.tool_calls));
      messages.appendChild(box);
    }
    $("call-request").textContent = JSON.stringify(call.request, null, 2);
    $("call-receipt").textContent = JSON.stringify(call.receipt, null, 2);
  }

  // -- tabs ------------------------------------------------------------------------------------
  function showTab(name) {
    for (const b of document.querySelectorAll("#tabs button")) b.classList.toggle("on", b.dataset.tab === name);
    for (const t of document.querySelectorAll(".tab")) t.hidden = t.id !== `tab-${name}`;
  }
  for (const b of document.querySelectorAll("#tabs button")) b.onclick = () => showTab(b.dataset.tab);

  // -- commits that arrive after the page was made (the live viewer of a store) ----------
  const mid = (s) => "n_" + s.replace(/[^\p{L}\p{N}]/gu, "_");
  const drawn = new Set(D.chart.nodes);
  function nodeOf(path) {  // as _viewer_chart.node_of: a fork's branch, else the stage
    const seg = path.split("/").map((s) => s.split("#")[0].split(":")[0]);
    for (let d = seg.length; d > 0; d--) {
      const tail = seg.slice(0, d);
      for (const name of [tail.slice(-2).join("/"), tail[tail.length - 1]]) {
        if (drawn.has(mid(name))) return mid(name);
      }
    }
    return null;
  }
  function append(list) {
    const following = current === C.length - 1;
    for (const c of list) {
      if (C.length && c.seq <= C[C.length - 1].seq) continue;  // had it already
      c.node = nodeOf(c.stage_path);
      c.member = c.member || "";
      const i = C.push(c) - 1;
      if (c.node) {
        (nodeCommits.get(c.node) || nodeCommits.set(c.node, []).get(c.node)).push(i);
        for (const g of document.querySelectorAll("svg.chart .node")) {
          if (g.dataset.node === c.node) g.classList.add("ran");
        }
      }
    }
    $("commit-count").textContent = `(${C.length})`;
    refilter();
    if (C.length && (following || current < 0)) select(C.length - 1);
  }
  window.trackwayViewer = { append, count: () => C.length };

  paint();
  if (C.length) select(C.length - 1);
  if (D.calls.length) showCall(0);
  showTab("commit");
  document.body.dataset.readyMs = performance.now().toFixed(1);
  document.body.dataset.ready = "true";
})();
