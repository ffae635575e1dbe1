// The dev console's page: renders what the stand-in Slack holds for the chosen person
// (the bot's Block Kit), and sends what they do to the console, which delivers it to the
// bot as Slack would. Plain DOM, no framework, no build step; Block Kit is drawn by
// blockkit.js.
import { blocksNode, el, mrkdwn, plain, readForm, writeForm } from "./blockkit.js";

const TOKEN = document.querySelector('meta[name="console-token"]').content;
const $ = (id) => document.getElementById(id);
const view = { me: localStorage.getItem("console.as"), tab: "channel", replyTo: null, snap: null };
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
  renderDirectMessages(snap);
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
    ? blocksNode(m.blocks, context(snap, { message_ts: m.ts }))
    : el("div", { class: "text" }, ...mrkdwn(m.text, context(snap, {})));
  const node = el("article", { class: `msg${m.ephemeral ? " ephemeral" : ""}`, "data-ts": m.ts }, header, body);
  if (m.ephemeral) node.append(el("div", { class: "only-you" }, "Only visible to you"));
  return node;
}

// The person's DM with the bot: its messages in order (a card sent there has no thread).
function renderDirectMessages(snap) {
  const box = $("dm-messages");
  const atBottom = box.scrollHeight - box.scrollTop - box.clientHeight < 40;
  const messages = snap.dm.messages;
  $("dm-count").textContent = messages.length ? `(approvals · ${messages.length})` : "(approvals)";
  box.replaceChildren(
    ...(messages.length
      ? messages.map((m) => messageNode(m, snap))
      : [el("p", { class: "muted" }, "No direct messages from the bot yet.")])
  );
  if (atBottom) box.scrollTop = box.scrollHeight;
}

function renderHome(snap) {
  for (const tab of ["channel", "home", "dm"]) {
    $(tab).hidden = view.tab !== tab;
    $(`tab-${tab}`).classList.toggle("active", view.tab === tab);
  }
  const home = snap.home;
  $("home-view").replaceChildren(
    home
      ? blocksNode(home.definition.blocks || [], context(snap, { view_id: home.id }, $("home-view")))
      : el("p", { class: "muted" }, "Waiting for the bot to publish this person's App Home…")
  );
}

let shownModal = "";
function renderModal(snap) {
  const modal = snap.modal;
  $("overlay").hidden = !modal;
  const key = modal ? JSON.stringify(modal) : "";
  if (key === shownModal) return;
  const typed = modal && shownModal && $("modal").dataset.viewId === modal.id ? readForm($("modal")) : {};
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
    blocksNode(def.blocks || [], { ...context(snap, { view_id: modal.id }, $("modal")), errors: modal.errors })
  );
  const buttons = el("div", { class: "modal-buttons" });
  const close = el("button", { type: "button", class: "secondary" }, plain(def.close) || "Cancel");
  close.addEventListener("click", () => act({ do: "close", view_id: modal.id }));
  buttons.append(close);
  if (def.submit) buttons.append(el("button", { type: "submit", class: "primary" }, plain(def.submit)));
  form.append(buttons);
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    act({ do: "submit", view_id: modal.id, values: readForm($("modal")) });
  });
  $("modal").dataset.viewId = modal.id;
  $("modal").setAttribute("aria-label", title);
  $("modal").replaceChildren(form);
  writeForm($("modal"), typed);
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

// -- small helpers ---------------------------------------------------------------------------

// What blockkit.js needs to draw for `snap`: names, the channel, and what a button press
// sends (`where`: the message's ts or the view's id; a view's typed values go along).
function context(snap, where, form) {
  return {
    names: snap.names,
    channel: snap.channel,
    press: (block, element) =>
      act({
        do: "click",
        block_id: block.block_id,
        action_id: element.action_id,
        ...where,
        ...(form ? { values: readForm(form) } : {}),
      }),
  };
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
