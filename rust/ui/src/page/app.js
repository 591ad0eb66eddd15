// Chock's page: one event stream, the questions waiting, the decision log,
// the sessions. Everything shown is set as text, never parsed as HTML.
"use strict";

const token = new URLSearchParams(location.search).get("token") || "";
const withToken = (path, params) => {
  const q = new URLSearchParams(params || {});
  q.set("token", token);
  return path + "?" + q.toString();
};
const $ = (id) => document.getElementById(id);
const el = (tag, props, ...children) => {
  const node = document.createElement(tag);
  Object.assign(node, props || {});
  for (const child of children) node.append(child);
  return node;
};

const servers = new Map();   // socket path -> {pid, project, command}
const questions = new Map(); // "path#id" -> card
const records = [];
const MAX_ROWS = 500;

const filterIds = { project: "filter-project", route: "filter-route", decision: "filter-decision", agent_kind: "filter-agent" };
const seen = { project: new Set(), route: new Set(), decision: new Set(), agent_kind: new Set() };

function showServers() {
  const running = [...servers.values()];
  $("servers").textContent = running.length === 0
    ? "no running Chock heard"
    : running.map((s) => `${s.command} ${s.pid}`).join(", ");
}

function showCount() {
  const n = questions.size;
  $("question-count").textContent = String(n);
  $("question-count").classList.toggle("some", n > 0);
  $("no-questions").hidden = n > 0;
}

async function send(server, id, allow, text, card, scope) {
  for (const b of card.querySelectorAll("button")) b.disabled = true;
  const body = { server, id, allow };
  if (text !== undefined) body.text = text;
  if (scope !== undefined) body.scope = scope;
  const reply = await fetch(withToken("/answer"), {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  if (!reply.ok) {
    const why = await reply.json().catch(() => ({ error: reply.statusText }));
    card.querySelector(".result").textContent = "not sent: " + why.error;
    for (const b of card.querySelectorAll("button")) b.disabled = false;
  } else {
    card.querySelector(".result").textContent = "sent";
  }
}

// The words of a yes beyond once, by the scope the question offers.
const SCOPE_WORDS = {
  session: { label: "Allow for this session", title: "every identical act until the asking session ends" },
  always: { label: "Always allow", title: "writes the rule shown below into the project's chock.zon" },
};

// The detail line an apply's diff follows (chock_sandbox's DIFF_HEADING):
// no line about a file the agent named reads so.
const DIFF_HEADING = "the diff of what lands (what decides what runs first):";

function appendDetail(card, detail) {
  const start = detail.indexOf(DIFF_HEADING);
  const head = start < 0 ? detail : detail.slice(0, start);
  if (head.length) {
    const details = el("details", { open: head.length <= 6 });
    details.append(el("summary", { textContent: `details (${head.length} lines)` }));
    details.append(el("pre", { textContent: head.join("\n") }));
    card.append(details);
  }
  if (start >= 0) card.append(diffView(detail.slice(start + 1)));
}

// An apply's diff, one collapsible section per file, in the order Chock
// gave (what decides what runs first); every line set as text.
function diffView(lines) {
  const view = el("div", { className: "diff" });
  view.append(el("div", { className: "quiet", textContent: DIFF_HEADING }));
  let section = null;
  for (const line of lines) {
    if (line.startsWith("diff --git ") || section === null) {
      section = el("details", { className: "diff-file", open: lines.length <= 200 });
      section.append(el("summary", { textContent: line }), el("pre"));
      view.append(section);
      if (line.startsWith("diff --git ")) continue;
    }
    const kind = line.startsWith("+") ? "add" : line.startsWith("-") ? "del" : "ctx";
    section.lastChild.append(el("span", { className: kind, textContent: line + "\n" }));
  }
  return view;
}

function addQuestion(data) {
  const key = data.server + "#" + data.id;
  if (questions.has(key)) return;
  const q = data.question;
  const card = el("div", { className: "question" });
  card.dataset.action = q.action;
  card.dataset.server = data.server;
  card.dataset.id = String(data.id);
  card.append(
    el("div", { className: "headline", textContent: q.summary }),
    el("div", { className: "from", textContent: `${data.command} ${data.pid} · ${q.project} · ${q.tool}` }),
    el("div", { className: "action", textContent: q.action }),
  );
  if (q.detail && q.detail.length) appendDetail(card, q.detail);
  if (q.allow_rules && q.allow_rules.length) {
    const rules = el("details");
    rules.append(el("summary", { textContent: "the rule that would answer it next time" }));
    rules.append(el("pre", { textContent: q.allow_rules.map(([rule, block]) => `${block}:\n  ${rule},`).join("\n") }));
    card.append(rules);
  }
  const answers = el("div", { className: "answers" });
  if (q.credential) {
    answers.append(el("span", { className: "quiet", textContent: `This asks for a password for ${q.credential.remote}: answer it in \`chock approve\`, where it is read with the echo off.` }));
    answers.append(el("button", { className: "deny answer-no", textContent: "No", onclick: () => send(data.server, data.id, false, undefined, card) }));
  } else if (q.wants_text) {
    const input = el("input", { type: "text", className: "answer-text", placeholder: "your answer" });
    answers.append(input,
      el("button", { className: "allow answer-send", textContent: "Send", onclick: () => send(data.server, data.id, true, input.value, card) }),
      el("button", { className: "deny answer-no", textContent: "No answer", onclick: () => send(data.server, data.id, false, undefined, card) }));
  } else {
    const reason = el("input", { type: "text", className: "answer-reason", placeholder: "why not (the agent is told)" });
    answers.append(el("button", { className: "allow answer-once", textContent: "Allow once", onclick: () => send(data.server, data.id, true, undefined, card) }));
    // Only the scopes the question offers: "always" is absent where an
    // organisation's or a package's ceiling decides, "session" where the
    // asker cannot keep a yes.
    for (const scope of q.scopes || []) {
      const words = SCOPE_WORDS[scope];
      if (!words) continue;
      answers.append(el("button", { className: `allow answer-${scope}`, textContent: words.label, title: words.title, onclick: () => send(data.server, data.id, true, undefined, card, scope) }));
    }
    answers.append(
      el("button", { className: "deny answer-no", textContent: "No", onclick: () => send(data.server, data.id, false, undefined, card) }),
      reason,
      el("button", { className: "deny answer-no-because", textContent: "No, because…", onclick: () => send(data.server, data.id, false, reason.value, card) }));
  }
  answers.append(el("span", { className: "result quiet" }));
  card.append(answers);
  questions.set(key, card);
  $("questions").append(card);
  // When it was shown, in ms since the epoch: what the latency is measured to.
  card.dataset.shownAt = String(Date.now());
  showCount();
}

function removeQuestion(server, id) {
  const key = server + "#" + id;
  const card = questions.get(key);
  if (card) card.remove();
  questions.delete(key);
  showCount();
}

function keeps(record) {
  for (const [field, id] of Object.entries(filterIds)) {
    const want = $(id).value;
    if (want && record[field] !== want) return false;
  }
  return true;
}

function noteValues(record) {
  for (const [field, id] of Object.entries(filterIds)) {
    const value = record[field];
    if (typeof value !== "string" || seen[field].has(value)) continue;
    seen[field].add(value);
    $(id).append(el("option", { value, textContent: value }));
  }
}

async function explain(record) {
  const box = $("explain");
  box.hidden = false;
  box.replaceChildren(el("div", { className: "quiet", textContent: `explaining ${record.action}…` }));
  const reply = await fetch(withToken("/explain", {
    project: record.project, action: record.action, agent: record.agent_kind || "",
    tool: record.tool || "", model: record.model || "",
  }));
  const data = await reply.json();
  box.replaceChildren();
  box.append(el("div", {}, el("strong", { textContent: record.action }), ` now: ${data.decision || "?"}`));
  if (data.error) {
    box.append(el("div", { className: "deny", textContent: data.error }));
    return;
  }
  const by = data.decided_by || {};
  const place = by.file ? ` at ${by.file}${by.line ? ":" + by.line : ""}` : "";
  box.append(el("div", { textContent: `decided by: ${by.layer}${by.policy ? " `" + by.policy + "`" : ""}${place}` }));
  if (by.rule) box.append(el("pre", { textContent: by.rule }));
  if (data.suggestion) {
    box.append(el("div", { textContent: `to allow it, add to ${data.suggestion.block}:` }));
    box.append(el("pre", { textContent: data.suggestion.rule + "," }));
  }
  box.append(el("button", { textContent: "close", onclick: () => { box.hidden = true; } }));
}

function row(record) {
  const tr = el("tr");
  const link = el("a", { href: "#", textContent: record.action, title: "chock policy explain " + record.action });
  link.addEventListener("click", (e) => { e.preventDefault(); explain(record); });
  const by = record.decided_by || {};
  const place = by.file ? `${by.file}${by.line ? ":" + by.line : ""}` : by.layer;
  tr.append(
    el("td", { textContent: (record.ts || "").replace("T", " ").replace("Z", "") }),
    el("td", { textContent: record.route || "" }),
    el("td", { className: "action" }, link),
    el("td", { className: "decision-" + record.decision, textContent: record.decision }),
    el("td", { textContent: `${record.answered_by || ""} (${place || "-"})` }),
    el("td", { textContent: record.agent_kind || "" }),
    el("td", { textContent: record.project || "" }),
  );
  return tr;
}

function addRecord(record) {
  records.push(record);
  if (records.length > MAX_ROWS) records.shift();
  noteValues(record);
  if (!keeps(record)) return;
  const body = $("log-rows");
  body.prepend(row(record));
  while (body.children.length > MAX_ROWS) body.lastChild.remove();
}

function redraw() {
  const body = $("log-rows");
  body.replaceChildren(...records.filter(keeps).reverse().map(row));
}
for (const id of Object.values(filterIds)) $(id).addEventListener("change", redraw);

async function loadSessions() {
  const reply = await fetch(withToken("/sessions"));
  if (!reply.ok) return;
  const all = await reply.json();
  $("session-rows").replaceChildren(...all.slice().reverse().map((s) => el("tr", {},
    el("td", { textContent: s.id }),
    el("td", { textContent: s.project || "-" }),
    el("td", { textContent: s.model || "-" }),
    el("td", { textContent: String(s.turns) }),
    el("td", { textContent: `${s.tokens.input} / ${s.tokens.output}` }),
    el("td", { textContent: s.state }),
  )));
}

function connect() {
  const events = new EventSource(withToken("/events"));
  events.addEventListener("open", () => { $("status").textContent = "live"; $("status").classList.add("live"); });
  events.addEventListener("error", () => { $("status").textContent = "reconnecting…"; $("status").classList.remove("live"); });
  events.addEventListener("reset", () => {
    servers.clear();
    for (const card of questions.values()) card.remove();
    questions.clear();
    records.length = 0;
    $("log-rows").replaceChildren();
    showServers();
    showCount();
  });
  events.addEventListener("server", (e) => {
    const s = JSON.parse(e.data);
    if (s.running) servers.set(s.server, s); else {
      servers.delete(s.server);
      for (const key of [...questions.keys()]) if (key.startsWith(s.server + "#")) removeQuestion(s.server, key.slice(s.server.length + 1));
    }
    showServers();
  });
  events.addEventListener("question", (e) => addQuestion(JSON.parse(e.data)));
  events.addEventListener("withdrawn", (e) => { const w = JSON.parse(e.data); removeQuestion(w.server, w.id); });
  events.addEventListener("record", (e) => addRecord(JSON.parse(e.data)));
}

connect();
loadSessions();
setInterval(loadSessions, 5000);
