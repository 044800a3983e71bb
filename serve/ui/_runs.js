// The runs of a store, filtered; refreshed every few seconds. Values are put on the page
// with textContent only.
"use strict";
(function () {
  const $ = (id) => document.getElementById(id);
  const el = (tag, cls, text) => {
    const node = document.createElement(tag);
    if (cls) node.className = cls;
    if (text !== undefined) node.textContent = text;
    return node;
  };
  const fields = ["status", "chart", "since", "q"];
  const params = new URLSearchParams(location.search);
  for (const f of fields) if (params.get(f)) $(`f-${f}`).value = params.get(f);
  const when = (t) => new Date(t * 1000).toISOString().replace("T", " ").slice(0, 19);
  function took(a, b) {
    if (b === null) return "-";
    const s = Math.max(0, b - a);
    return s < 1 ? `${(s * 1000).toFixed(0)} ms` : s < 120 ? `${s.toFixed(1)} s` : `${(s / 60).toFixed(1)} min`;
  }
  let asked = 0;
  async function load() {
    const query = new URLSearchParams();
    for (const f of fields) {
      const v = $(`f-${f}`).value.trim();
      if (v) query.set(f, v);
    }
    const mine = ++asked;
    history.replaceState(null, "", query.toString() ? `?${query}` : location.pathname);
    const reply = await fetch(`api/runs?${query}`, { headers: { accept: "application/json" } });
    const doc = await reply.json();
    if (mine !== asked) return;  // a newer filter was asked meanwhile
    if (!reply.ok) {
      $("count").textContent = doc.error;
      document.body.dataset.ready = "true";
      return;
    }
    $("meta").textContent = doc.store;
    const charts = $("f-chart");
    const chosen = charts.value || params.get("chart") || "";
    const have = new Set([...charts.options].map((o) => o.value));
    for (const c of doc.charts) if (!have.has(c)) charts.appendChild(el("option", "", c));
    charts.value = chosen;
    $("count").textContent = `${doc.shown} of ${doc.total} runs` + (doc.cut ? ` (the newest ${doc.shown})` : "");
    const body = $("runs").tBodies[0];
    body.replaceChildren();
    for (const r of doc.runs) {
      const tr = el("tr");
      tr.dataset.run = r.run_id;
      tr.dataset.status = r.status;
      const a = el("a", "", r.run_id);
      a.href = `runs/${encodeURIComponent(r.run_id)}`;
      const first = el("td");
      first.appendChild(a);
      tr.appendChild(first);
      tr.appendChild(el("td", "", r.chart_id));
      tr.appendChild(el("td", `status-${r.status}`, r.status));
      tr.appendChild(el("td", "num", String(r.commit_count)));
      tr.appendChild(el("td", "", when(r.started_at)));
      tr.appendChild(el("td", "num", took(r.started_at, r.ended_at)));
      body.appendChild(tr);
    }
    document.body.dataset.shown = String(doc.shown);
    document.body.dataset.runs = doc.runs.map((r) => r.run_id).join(" ");
    document.body.dataset.ready = "true";
  }
  let timer = null;
  const soon = () => { clearTimeout(timer); timer = setTimeout(load, 150); };
  for (const f of fields) {
    $(`f-${f}`).addEventListener("input", soon);
    $(`f-${f}`).addEventListener("change", soon);
  }
  $("filters").addEventListener("submit", (e) => { e.preventDefault(); load(); });
  load();
  setInterval(load, 3000);
})();
