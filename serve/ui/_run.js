// The live part of a run's page: its commits arrive over server-sent events (each event's id
// is the commit's seq, so a reconnect resumes after the last one seen), how the run stands,
// and a paused run's question with a form to answer it. Values go on the page as text only.
"use strict";
(function () {
  const L = JSON.parse(document.getElementById("live-data").textContent);
  const V = window.trackwayViewer;
  const $ = (id) => document.getElementById(id);
  let pending = [];
  let queued = false;
  function flush() {
    queued = false;
    const list = pending;
    pending = [];
    V.append(list);
    document.body.dataset.commits = String(V.count());
  }
  document.body.dataset.commits = String(V.count());
  let shownPause = null;
  function standing(s) {
    document.body.dataset.status = s.status;
    $("live-status").textContent = s.status + (s.status === "running" ? " · live" : "");
    $("live-status").className = `status-${s.status}`;
    const box = $("question");
    if (!s.pause) {
      box.hidden = true;
      shownPause = null;
      return;
    }
    if (shownPause === s.pause.checkpoint_id) return;
    shownPause = s.pause.checkpoint_id;
    const p = s.pause.payload;
    const question = p && typeof p === "object" && typeof p.question === "string" ? p.question
      : typeof p === "string" ? p : "This run waits for an answer.";
    $("question-text").textContent = question;
    $("question-where").textContent = `paused at ${s.pause.paused_at} (checkpoint ${s.pause.checkpoint_id})`;
    $("question-payload").textContent = JSON.stringify(p, null, 2);
    $("answer-result").textContent = "";
    $("answer-value").value = "";
    $("answer-send").disabled = !L.can_answer;
    $("answer-note").textContent = L.answer_note;
    box.hidden = false;
  }
  $("answer-form").addEventListener("submit", async (e) => {
    e.preventDefault();
    const text = $("answer-value").value;
    let value;
    try { value = JSON.parse(text); } catch (_) { value = text; }  // not JSON: a string
    $("answer-send").disabled = true;
    const reply = await fetch(L.answer, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json" },
      body: JSON.stringify({ checkpoint_id: shownPause, value }),
    });
    const doc = await reply.json();
    $("answer-result").textContent = reply.ok ? doc.message : `refused: ${doc.error}`;
    document.body.dataset.answered = reply.ok ? "true" : "false";
    if (!reply.ok) $("answer-send").disabled = !L.can_answer;
  });
  const source = new EventSource(L.events);
  source.addEventListener("commit", (e) => {
    pending.push(JSON.parse(e.data));
    if (!queued) { queued = true; requestAnimationFrame(flush); }
  });
  source.addEventListener("status", (e) => standing(JSON.parse(e.data)));
  source.addEventListener("end", () => {
    source.close();
    $("live-note").textContent = "The run has ended: reload for its narrative and model calls.";
  });
  source.onopen = () => { document.body.dataset.live = "open"; };
  source.onerror = () => { document.body.dataset.live = "reconnecting"; };
})();
