// The dev console's page: renders what the stand-in Slack holds for the chosen person
// (the bot's Block Kit), and sends what they do to the console, which delivers it to the
// bot as Slack would. Plain DOM, no framework, no build step; text is always inserted as
// text (never as HTML), so nothing the bot or a person writes can run here.
"use strict";

const TOKEN = document.querySelector('meta[name="console-token"]').content;
const $ = (id) => document.getElementById(id);
const view = { me: localStorage.getItem("console.as"), tab: "channel", replyTo: null, snap: null };
const EMOJI = {
  warning: "⚠️", white_check_mark: "✅", x: "❌", no_entry: "⛔", no_entry_sign: "🚫",
  information_source: "ℹ️", hourglass: "⌛", hourglass_flowing_sand: "⏳", stop_sign: "🛑",
  pushpin: "📌", lock: "🔒", leftwards_arrow_with_hook: "↩️", alarm_clock: "⏰",
  ballot_box_with_check: "☑️", construction: "🚧", robot_face: "🤖", bell: "🔔",
  mag: "🔍", question: "❓", heavy_check_mark: "✔️", eyes: "👀", rocket: "🚀",
};

// -- talking to the console ------------------------------------------------------------

async function call(path, options = {}) {
  const headers = { "X-Console-Token": TOKEN, ...(options.headers || {}) };
  const response = await fetch(path, { ...options, headers });
  const data = await response.json().catch(() => ({ ok: false, error: `HTTP ${response.status}` }));
  if (!response.ok || data.ok === false) throw new Error(data.error || `HTTP ${response.status}`);
  return data;
}

async function act(action) {
  try {
    await call("/console/act", {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ as: view.me, ...action }),
    });
  } catch (error) {
    showStatus(`refused: ${error.message}`, true);
  }
}

let poller = null;
async function poll() {
  const mine = (poller = new AbortController());
  let since = null;
  while (poller === mine) {
    try {
      const query = new URLSearchParams({ as: view.me || "" });
      if (since !== null) query.set("since", String(since));
      const snap = await call(`/console/state?${query}`, { signal: mine.signal });
      if (poller !== mine) return;
      since = snap.version;
      render(snap);
    } catch (error) {
      if (poller !== mine) return;
      showStatus("the console stopped (restart approvals-bot dev, then reload)", true);
      await new Promise((resolve) => setTimeout(resolve, 2000));
    }
  }
}

function restart() {
  if (poller) poller.abort();
  poll();
}

// -- the page -----------------------------------------------------------------------------

function render(snap) {
  const first = view.snap === null;
  view.snap = snap;
  view.me = snap.me;
  if (first) renderPicker(snap);
  $("as").value = view.me;
  $("team").textContent = snap.team;
  showStatus(snap.ready ? "bot connected" : "bot starting…", !snap.ready);
  renderPeople(snap);
  renderComposer(snap);
  renderMessages(snap);
  renderHome(snap);
  renderModal(snap);
  renderLog(snap);
}

function showStatus(text, bad) {
  $("status").textContent = text;
  $("status").classList.toggle("bad", Boolean(bad));
}

function renderPicker(snap) {
  const select = $("as");
  select.replaceChildren(
    ...snap.people.map((p) => {
      const option = el("option", {}, `${p.name} — ${roleText(p)}`);
      option.value = p.id;
      return option;
    })
  );
  select.value = view.me;
}

function roleText(person) {
  return person.in_channel ? person.role : `${person.role} (not in #ops)`;
}

function renderPeople(snap) {
  $("people").replaceChildren(
    ...snap.people.map((p) =>
      el("li", { class: p.id === snap.me ? "me" : "" }, `${p.name} `, el("small", {}, `${roleText(p)} · ${p.id}`))
    )
  );
}

function me(snap) {
  return snap.people.find((p) => p.id === snap.me);
}

function renderComposer(snap) {
  const person = me(snap);
  $("not-member").hidden = person.in_channel;
  $("not-member").textContent = `${person.name} is not in #ops: they can read it and press its buttons (a channel preview), not post.`;
  $("message").disabled = !person.in_channel;
  $("send").disabled = !person.in_channel;
  const root = view.replyTo && snap.messages.find((m) => m.ts === view.replyTo);
  $("reply-to").hidden = !root;
  if (root) $("reply-to-text").textContent = excerpt(root.text, 60);
  $("message").placeholder = root ? "Reply in thread…" : "Message #ops — try /agent deploy payments 1.2.3";
}

function renderMessages(snap) {
  const box = $("messages");
  const atBottom = box.scrollHeight - box.scrollTop - box.clientHeight < 40;
  const roots = new Map();
  const order = [];
  for (const m of snap.messages) {
    const root = m.thread_ts && m.thread_ts !== m.ts ? m.thread_ts : null;
    if (root && roots.has(root)) roots.get(root).push(m);
    else {
      roots.set(m.ts, []);
      order.push(m);
    }
  }
  box.replaceChildren(
    ...order.map((m) => {
      const replies = roots.get(m.ts);
      const node = messageNode(m, snap);
      if (!m.ephemeral && (replies.length || m.user === snap.bot.id)) {
        node.append(threadNode(m, replies, snap));
      }
      return node;
    })
  );
  if (atBottom) box.scrollTop = box.scrollHeight;
}

function threadNode(root, replies, snap) {
  const reply = el("button", { type: "button", class: "link" }, "Reply in thread");
  reply.addEventListener("click", () => {
    view.replyTo = root.ts;
    renderComposer(snap);
    $("message").focus();
  });
  const count = replies.filter((m) => !m.ephemeral).length;
  return el(
    "div",
    { class: "thread", "aria-label": "Thread" },
    el("div", { class: "thread-count" }, count ? `${count} ${count === 1 ? "reply" : "replies"}` : "", reply),
    ...replies.map((m) => messageNode(m, snap))
  );
}

function messageNode(m, snap) {
  const author = snap.names[m.user] || (m.user === "USLACKBOT" ? "Slackbot" : m.user);
  const isApp = m.user === snap.bot.id;
  const header = el(
    "div",
    { class: "msg-head" },
    el("span", { class: "author" }, author),
    isApp ? el("span", { class: "app-badge" }, "APP") : "",
    el("time", {}, timeOf(m.ts)),
    m.edited ? el("span", { class: "edited" }, "(edited)") : ""
  );
  const body = m.blocks && m.blocks.length
    ? blocksNode(m.blocks, { where: "message", ts: m.ts }, snap)
    : el("div", { class: "text" }, ...mrkdwn(m.text, snap));
  const node = el("article", { class: `msg${m.ephemeral ? " ephemeral" : ""}`, "data-ts": m.ts }, header, body);
  if (m.ephemeral) node.append(el("div", { class: "only-you" }, "Only visible to you"));
  return node;
}

function renderHome(snap) {
  $("channel").hidden = view.tab !== "channel";
  $("home").hidden = view.tab !== "home";
  $("tab-channel").classList.toggle("active", view.tab === "channel");
  $("tab-home").classList.toggle("active", view.tab === "home");
  const home = snap.home;
  $("home-view").replaceChildren(
    home
      ? blocksNode(home.definition.blocks || [], { where: "view", viewId: home.id }, snap)
      : el("p", { class: "muted" }, "Waiting for the bot to publish this person's App Home…")
  );
}

let shownModal = "";
function renderModal(snap) {
  const modal = snap.modal;
  $("overlay").hidden = !modal;
  const key = modal ? JSON.stringify(modal) : "";
  if (key === shownModal) return;
  const typed = modal && shownModal && $("modal").dataset.viewId === modal.id ? readForm() : {};
  shownModal = key;
  if (!modal) {
    $("modal").replaceChildren();
    return;
  }
  const def = modal.definition;
  const title = plain(def.title);
  const form = el("form", { class: "modal-form", novalidate: "" });
  form.append(
    el("h2", { class: "modal-title" }, title),
    modal.problem ? el("div", { class: "problem", role: "alert" }, modal.problem) : "",
    blocksNode(def.blocks || [], { where: "view", viewId: modal.id, errors: modal.errors }, snap)
  );
  const buttons = el("div", { class: "modal-buttons" });
  const close = el("button", { type: "button", class: "secondary" }, plain(def.close) || "Cancel");
  close.addEventListener("click", () => act({ do: "close", view_id: modal.id }));
  buttons.append(close);
  if (def.submit) buttons.append(el("button", { type: "submit", class: "primary" }, plain(def.submit)));
  form.append(buttons);
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    act({ do: "submit", view_id: modal.id, values: readForm() });
  });
  $("modal").dataset.viewId = modal.id;
  $("modal").setAttribute("aria-label", title);
  $("modal").replaceChildren(form);
  writeForm(typed);
}

function renderLog(snap) {
  $("log").replaceChildren(
    ...snap.log
      .slice()
      .reverse()
      .map((c) =>
        el(
          "li",
          { class: c.error ? "refused" : "" },
          el("code", {}, c.method),
          c.error ? ` ✗ ${c.error}` : " ✓",
          c.about ? el("small", {}, ` ${c.about}`) : ""
        )
      )
  );
}

// -- Block Kit --------------------------------------------------------------------------------

function blocksNode(blocks, where, snap) {
  return el("div", { class: "blocks" }, ...blocks.map((b) => blockNode(b, where, snap)));
}

function blockNode(block, where, snap) {
  switch (block.type) {
    case "section": return sectionNode(block, where, snap);
    case "context":
      return el("div", { class: "block context" }, ...(block.elements || []).map((e) => textNode(e, snap, "span")));
    case "header": return el("h3", { class: "block header" }, plain(block.text));
    case "divider": return el("hr", { class: "block divider" });
    case "actions":
      return el("div", { class: "block actions" }, ...(block.elements || []).map((e) => elementNode(e, block, where, snap)));
    case "input": return inputNode(block, where, snap);
    default: return unrendered(block);
  }
}

function sectionNode(block, where, snap) {
  const node = el("div", { class: "block section" });
  if (block.text) node.append(textNode(block.text, snap, "div"));
  if (block.fields) node.append(el("div", { class: "fields" }, ...block.fields.map((f) => textNode(f, snap, "div"))));
  if (block.accessory) node.append(elementNode(block.accessory, block, where, snap));
  return node;
}

function textNode(text, snap, tag) {
  if (!text || (text.type !== "mrkdwn" && text.type !== "plain_text")) return unrendered(text || {});
  const parts = text.type === "mrkdwn" ? mrkdwn(text.text, snap) : [emoji(text.text)];
  return el(tag, { class: "text" }, ...parts);
}

function elementNode(element, block, where, snap) {
  if (element.type !== "button") return unrendered(element);
  const style = element.style ? ` ${element.style}` : "";
  const button = el("button", { type: "button", class: `bk-button${style}` }, plain(element.text));
  button.addEventListener("click", async () => {
    button.disabled = true;
    const target = where.where === "message" ? { message_ts: where.ts } : { view_id: where.viewId, values: readForm() };
    await act({ do: "click", block_id: block.block_id, action_id: element.action_id, ...target });
    button.disabled = false;
  });
  return button;
}

function inputNode(block, where, snap) {
  const element = block.element || {};
  const id = `in-${block.block_id}`;
  const error = where.errors && where.errors[block.block_id];
  const label = el("label", { class: "input-label", for: id }, plain(block.label), block.optional ? el("small", {}, " (optional)") : "");
  let field;
  if (element.type === "plain_text_input") {
    field = el(element.multiline ? "textarea" : "input", { id, class: "bk-input" });
    if (element.initial_value) field.value = element.initial_value;
    if (element.placeholder) field.placeholder = plain(element.placeholder);
  } else if (element.type === "checkboxes" || element.type === "radio_buttons") {
    const kind = element.type === "checkboxes" ? "checkbox" : "radio";
    field = el("div", { id, class: "choices", role: "group", "aria-label": plain(block.label) },
      ...(element.options || []).map((o) => {
        const box = el("input", { type: kind, name: id, value: o.value });
        return el("label", { class: "choice" }, box, " ", textNode(o.text, snap, "span"),
          o.description ? el("small", {}, " ", ...mrkdwn(o.description.text, snap)) : "");
      }));
  } else if (element.type === "static_select") {
    field = el("select", { id, class: "bk-input" }, el("option", { value: "" }, "Choose…"),
      ...(element.options || []).map((o) => el("option", { value: o.value }, plain(o.text))));
  } else {
    field = unrendered(element);
  }
  field.dataset.blockId = block.block_id;
  field.dataset.actionId = element.action_id;
  field.dataset.kind = element.type;
  return el("div", { class: `block input${error ? " has-error" : ""}` }, label, field,
    block.hint ? el("div", { class: "hint" }, plain(block.hint)) : "",
    error ? el("div", { class: "field-error", role: "alert" }, error) : "");
}

function unrendered(thing) {
  const kind = (thing && thing.type) || "(no type)";
  return el("div", { class: "block unrendered" },
    el("strong", {}, `not rendered: ${kind}`),
    el("span", {}, " — the console does not draw this Block Kit type; Slack may."),
    el("details", {}, el("summary", {}, "JSON"), el("pre", {}, JSON.stringify(thing, null, 2))));
}

function readForm() {
  const values = {};
  for (const field of document.querySelectorAll("#modal [data-block-id], #home-view [data-block-id]")) {
    const { blockId, actionId, kind } = field.dataset;
    let value;
    if (kind === "checkboxes") value = [...field.querySelectorAll("input:checked")].map((i) => i.value);
    else if (kind === "radio_buttons") value = (field.querySelector("input:checked") || {}).value || null;
    else value = field.value;
    values[blockId] = { [actionId]: value };
  }
  return values;
}

function writeForm(values) {
  for (const field of document.querySelectorAll("#modal [data-block-id]")) {
    const { blockId, actionId, kind } = field.dataset;
    const value = values[blockId] && values[blockId][actionId];
    if (value === undefined || value === null) continue;
    if (kind === "checkboxes" || kind === "radio_buttons") {
      for (const box of field.querySelectorAll("input")) box.checked = [].concat(value).includes(box.value);
    } else field.value = value;
  }
}

// -- Slack's mrkdwn, as text nodes ------------------------------------------------------------------

function mrkdwn(text, snap) {
  const out = [];
  const fences = String(text || "").split("```");
  fences.forEach((part, i) => {
    if (i % 2 === 1) out.push(el("pre", { class: "code" }, entities(part.replace(/^\n/, "").replace(/\n$/, ""))));
    else out.push(...inlineCode(i > 0 ? part.replace(/^\n/, "") : part, snap));
  });
  return out;
}

function inlineCode(text, snap) {
  const out = [];
  text.split("`").forEach((part, i) => {
    if (i % 2 === 1) out.push(el("code", {}, entities(part)));
    else out.push(...linksAndStyles(part, snap));
  });
  return out;
}

function linksAndStyles(text, snap) {
  const out = [];
  let last = 0;
  for (const match of text.matchAll(/<([^<>]+)>/g)) {
    out.push(...styled(text.slice(last, match.index)));
    out.push(special(match[1], snap));
    last = match.index + match[0].length;
  }
  out.push(...styled(text.slice(last)));
  return out;
}

function special(inner, snap) {
  const [target, label] = splitOnce(inner, "|");
  if (target.startsWith("@")) {
    const id = target.slice(1);
    return el("span", { class: "mention" }, `@${snap.names[id] || id}`);
  }
  if (target.startsWith("#")) {
    const id = target.slice(1);
    return el("span", { class: "mention" }, `#${label || (id === snap.channel.id ? snap.channel.name : id)}`);
  }
  if (target.startsWith("!date^")) {
    const seconds = Number(target.split("^")[1]);
    return el("time", {}, Number.isFinite(seconds) ? new Date(seconds * 1000).toLocaleString() : entities(label || ""));
  }
  if (target.startsWith("!")) return el("span", { class: "mention" }, `@${target.slice(1)}`);
  if (/^(https?:|mailto:)/.test(target)) {
    return el("a", { href: entities(target), target: "_blank", rel: "noopener noreferrer" }, entities(label || target));
  }
  return document.createTextNode(entities(`<${inner}>`));
}

function styled(text) {
  const out = [];
  const pattern = /(^|[\s(])([*_~])(?=\S)([^*_~\n]*?\S)\2(?=$|[\s).,:;!?])/g;
  let last = 0;
  for (const match of text.matchAll(pattern)) {
    const start = match.index + match[1].length;
    out.push(document.createTextNode(emoji(entities(text.slice(last, start)))));
    const tag = { "*": "strong", _: "em", "~": "s" }[match[2]];
    out.push(el(tag, {}, emoji(entities(match[3]))));
    last = match.index + match[0].length;
  }
  out.push(document.createTextNode(emoji(entities(text.slice(last)))));
  return out;
}

function entities(text) {
  return text.replace(/&lt;/g, "<").replace(/&gt;/g, ">").replace(/&amp;/g, "&");
}

function emoji(text) {
  return text.replace(/:([a-z0-9_+-]+):/g, (whole, name) => EMOJI[name] || whole);
}

function plain(text) {
  return text && typeof text.text === "string" ? emoji(text.text) : "";
}

// -- small helpers ------------------------------------------------------------------------------------

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value !== "" || key === "novalidate") node.setAttribute(key, value);
  }
  for (const child of children) {
    if (child === "" || child === null || child === undefined) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

function splitOnce(text, separator) {
  const at = text.indexOf(separator);
  return at < 0 ? [text, ""] : [text.slice(0, at), text.slice(at + 1)];
}

function excerpt(text, length) {
  const flat = String(text || "").replace(/\s+/g, " ");
  return flat.length > length ? `${flat.slice(0, length)}…` : flat;
}

function timeOf(ts) {
  return new Date(Number(ts) * 1000).toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" });
}

// -- wiring ---------------------------------------------------------------------------------------------

$("as").addEventListener("change", (event) => {
  view.me = event.target.value;
  localStorage.setItem("console.as", view.me);
  view.replyTo = null;
  shownModal = "\u0000"; // redraw the new person's modal, if any
  restart();
  if (view.tab === "home") act({ do: "home" });
});

for (const tab of document.querySelectorAll(".tab")) {
  tab.addEventListener("click", () => {
    view.tab = tab.dataset.tab;
    if (view.snap) renderHome(view.snap);
    if (view.tab === "home") act({ do: "home" });
  });
}

$("reply-cancel").addEventListener("click", () => {
  view.replyTo = null;
  if (view.snap) renderComposer(view.snap);
});

$("composer").addEventListener("submit", async (event) => {
  event.preventDefault();
  const text = $("message").value.trim();
  if (!text) return;
  $("message").value = "";
  await act({ do: "send", text, thread_ts: view.replyTo });
});

poll();
