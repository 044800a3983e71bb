// The chat page of serve_agent: posts messages, follows each run's events over SSE read
// with fetch (so the request carries the page's cookies and, if the page holds one in
// sessionStorage["trackway.token"], a bearer token: EventSource can set no header), shows
// tokens and tool progress as they come, and a pending approval with its buttons.
"use strict";
(function () {
  const $ = (id) => document.getElementById(id);
  let conversation = null;
  let bubble = null;

  function headers(extra) {
    const h = Object.assign({ "content-type": "application/json" }, extra || {});
    const token = sessionStorage.getItem("trackway.token");
    if (token) h.authorization = "Bearer " + token;
    return h;
  }

  function say(cls, text) {
    const div = document.createElement("div");
    div.className = "bubble " + cls;
    div.textContent = text;
    $("log").appendChild(div);
    return div;
  }

  function status(text) { $("status").textContent = text || ""; }

  async function post(path, body) {
    const r = await fetch(path, {
      method: "POST", headers: headers(), credentials: "same-origin", body: JSON.stringify(body),
    });
    const data = await r.json();
    if (!r.ok) throw new Error(data.error || r.statusText);
    return data;
  }

  function onEvent(name, data) {
    if (name === "stream.token") {
      if (!bubble) bubble = say("agent", "");
      bubble.textContent += data.text || "";
    } else if (name === "status") {
      status(data.text);  // the agent's voice words it (.thinking_templates, app_name)
    } else if (name === "stream.tool_end") {
      status("");
    }
  }

  async function follow(runId, lastId) {
    const h = headers({ accept: "text/event-stream" });
    if (lastId) h["last-event-id"] = lastId;
    const r = await fetch("/api/runs/" + encodeURIComponent(runId) + "/events", { headers: h, credentials: "same-origin" });
    if (!r.ok) throw new Error("events: " + r.status);
    const reader = r.body.getReader();
    const decoder = new TextDecoder();
    let buffer = "";
    let ended = null;
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += decoder.decode(value, { stream: true }).replace(/\r\n/g, "\n");
      let cut;
      while ((cut = buffer.indexOf("\n\n")) >= 0) {
        const block = buffer.slice(0, cut);
        buffer = buffer.slice(cut + 2);
        let id = null, name = "message", data = "";
        for (const line of block.split("\n")) {
          if (line.startsWith(":")) continue;
          const i = line.indexOf(":");
          const field = i < 0 ? line : line.slice(0, i);
          const v = i < 0 ? "" : line.slice(i + 1).replace(/^ /, "");
          if (field === "id") id = v; else if (field === "event") name = v; else if (field === "data") data += v;
        }
        if (!data) continue;
        if (id) lastId = id;
        const parsed = JSON.parse(data);
        if (name === "run.end") ended = parsed.status; else onEvent(name, parsed);
      }
    }
    await settle(runId, lastId, ended);
  }

  async function settle(runId, lastId, ended) {
    const r = await fetch("/api/runs/" + encodeURIComponent(runId), { headers: headers(), credentials: "same-origin" });
    const run = await r.json();
    if (run.status === "paused" && run.question) {
      status("Waiting for your answer");
      $("question-text").textContent = run.question.question;
      $("question").hidden = false;
      const answer = async (value) => {
        $("question").hidden = true;
        try {
          await post("/api/runs/" + encodeURIComponent(runId) + "/answer", { answer: value });
          await follow(runId, lastId);
        } catch (e) { say("error", String(e.message || e)); }
      };
      $("approve").onclick = () => answer("approve");
      $("decline").onclick = () => answer("decline");
      return;
    }
    status("");
    if (run.status === "done") {
      if (!bubble) bubble = say("agent", "");
      bubble.textContent = run.answer || "";
      bubble.dataset.final = "true";
    } else {
      say("error", "The run " + (ended || run.status) + (run.error ? ": " + run.error.message : ""));
    }
    bubble = null;
  }

  $("send").addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const text = $("message").value.trim();
    if (!text) return;
    $("message").value = "";
    say("user", text);
    bubble = null;
    try {
      const path = conversation ? "/api/conversations/" + encodeURIComponent(conversation) : "/api/conversations";
      const started = await post(path, { message: text });
      conversation = started.conversation_id;
      await follow(started.run_id, null);
    } catch (e) { say("error", String(e.message || e)); }
  });
})();
