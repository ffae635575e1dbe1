// Block Kit and Slack's mrkdwn as DOM nodes, for the dev console's page. Text is always
// inserted as text, never as HTML, so nothing the bot or a person writes can run here.
// A block or element this file does not draw is shown as a visible "not rendered" box.

const EMOJI = {
  warning: "⚠️", white_check_mark: "✅", x: "❌", no_entry: "⛔", no_entry_sign: "🚫",
  information_source: "ℹ️", hourglass: "⌛", hourglass_flowing_sand: "⏳", stop_sign: "🛑",
  pushpin: "📌", lock: "🔒", leftwards_arrow_with_hook: "↩️", alarm_clock: "⏰",
  ballot_box_with_check: "☑️", construction: "🚧", robot_face: "🤖", bell: "🔔",
  mag: "🔍", question: "❓", heavy_check_mark: "✔️", eyes: "👀", rocket: "🚀",
};

// -- Block Kit --------------------------------------------------------------------------------

// `ctx`: names (user id -> name), channel ({id, name}), errors (block id -> inline error),
// press(block, element) for a button, container ("message" or "view").
export function blocksNode(blocks, ctx) {
  return el("div", { class: "blocks" }, ...blocks.map((b) => blockNode(b, ctx)));
}

function blockNode(block, ctx) {
  switch (block.type) {
    case "section": return sectionNode(block, ctx);
    case "context":
      return el("div", { class: "block context" }, ...(block.elements || []).map((e) => textNode(e, ctx, "span")));
    case "header": return el("h3", { class: "block header" }, plain(block.text));
    case "divider": return el("hr", { class: "block divider" });
    case "actions":
      return el("div", { class: "block actions" }, ...(block.elements || []).map((e) => elementNode(e, block, ctx)));
    case "input": return inputNode(block, ctx);
    default: return unrendered(block);
  }
}

function sectionNode(block, ctx) {
  const node = el("div", { class: "block section" });
  if (block.text) node.append(textNode(block.text, ctx, "div"));
  if (block.fields) node.append(el("div", { class: "fields" }, ...block.fields.map((f) => textNode(f, ctx, "div"))));
  if (block.accessory) node.append(elementNode(block.accessory, block, ctx));
  return node;
}

function textNode(text, ctx, tag) {
  if (!text || (text.type !== "mrkdwn" && text.type !== "plain_text")) return unrendered(text || {});
  const parts = text.type === "mrkdwn" ? mrkdwn(text.text, ctx) : [emoji(text.text)];
  return el(tag, { class: "text" }, ...parts);
}

function elementNode(element, block, ctx) {
  if (element.type !== "button") return unrendered(element);
  const style = element.style ? ` ${element.style}` : "";
  const button = el("button", { type: "button", class: `bk-button${style}` }, plain(element.text));
  button.addEventListener("click", async () => {
    button.disabled = true;
    await ctx.press(block, element);
    button.disabled = false;
  });
  return button;
}

function inputNode(block, ctx) {
  const element = block.element || {};
  const id = `in-${block.block_id}`;
  const error = ctx.errors && ctx.errors[block.block_id];
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
        return el("label", { class: "choice" }, box, " ", textNode(o.text, ctx, "span"),
          o.description ? el("small", {}, " ", ...mrkdwn(o.description.text, ctx)) : "");
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

export function unrendered(thing) {
  const kind = (thing && thing.type) || "(no type)";
  return el("div", { class: "block unrendered" },
    el("strong", {}, `not rendered: ${kind}`),
    el("span", {}, " — the console does not draw this Block Kit type; Slack may."),
    el("details", {}, el("summary", {}, "JSON"), el("pre", {}, JSON.stringify(thing, null, 2))));
}

// What was typed or chosen in the inputs under `root`: block id -> action id -> value.
export function readForm(root) {
  const values = {};
  for (const field of root.querySelectorAll("[data-block-id]")) {
    const { blockId, actionId, kind } = field.dataset;
    let value;
    if (kind === "checkboxes") value = [...field.querySelectorAll("input:checked")].map((i) => i.value);
    else if (kind === "radio_buttons") value = (field.querySelector("input:checked") || {}).value || null;
    else value = field.value;
    values[blockId] = { [actionId]: value };
  }
  return values;
}

export function writeForm(root, values) {
  for (const field of root.querySelectorAll("[data-block-id]")) {
    const { blockId, actionId, kind } = field.dataset;
    const value = values[blockId] && values[blockId][actionId];
    if (value === undefined || value === null) continue;
    if (kind === "checkboxes" || kind === "radio_buttons") {
      for (const box of field.querySelectorAll("input")) box.checked = [].concat(value).includes(box.value);
    } else field.value = value;
  }
}

// -- Slack's mrkdwn, as text nodes ------------------------------------------------------------------

export function mrkdwn(text, ctx) {
  const out = [];
  const fences = String(text || "").split("```");
  fences.forEach((part, i) => {
    if (i % 2 === 1) out.push(el("pre", { class: "code" }, entities(part.replace(/^\n/, "").replace(/\n$/, ""))));
    else out.push(...inlineCode(i > 0 ? part.replace(/^\n/, "") : part, ctx));
  });
  return out;
}

function inlineCode(text, ctx) {
  const out = [];
  text.split("`").forEach((part, i) => {
    if (i % 2 === 1) out.push(el("code", {}, entities(part)));
    else out.push(...linksAndStyles(part, ctx));
  });
  return out;
}

function linksAndStyles(text, ctx) {
  const out = [];
  let last = 0;
  for (const match of text.matchAll(/<([^<>]+)>/g)) {
    out.push(...styled(text.slice(last, match.index)));
    out.push(special(match[1], ctx));
    last = match.index + match[0].length;
  }
  out.push(...styled(text.slice(last)));
  return out;
}

function special(inner, ctx) {
  const [target, label] = splitOnce(inner, "|");
  if (target.startsWith("@")) {
    const id = target.slice(1);
    return el("span", { class: "mention" }, `@${ctx.names[id] || id}`);
  }
  if (target.startsWith("#")) {
    const id = target.slice(1);
    return el("span", { class: "mention" }, `#${label || (id === ctx.channel.id ? ctx.channel.name : id)}`);
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

export function emoji(text) {
  return text.replace(/:([a-z0-9_+-]+):/g, (whole, name) => EMOJI[name] || whole);
}

export function plain(text) {
  return text && typeof text.text === "string" ? emoji(text.text) : "";
}

// -- small helpers ------------------------------------------------------------------------------------

export function el(tag, attrs, ...children) {
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
