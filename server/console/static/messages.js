// A topic's messages: peek the next N of a subscription, look one up by id; each payload shown
// as text, JSON or hex, with its key and properties. Batched entries are split here, as the
// admin clients do (the admin API answers the whole batch).

import { getRaw, seg } from "./api.js";
import { actionForm, failure, h } from "./dom.js";

// -- SingleMessageMetadata, read from the batch (protobuf wire format) -----------------------
function varint(bytes, at) {
  let value = 0;
  let scale = 1;
  for (;;) {
    const byte = bytes[at.i++];
    value += (byte & 0x7f) * scale;
    if (byte < 0x80) return value;
    scale *= 128;
  }
}

function fields(bytes) {
  const found = [];
  const at = { i: 0 };
  while (at.i < bytes.length) {
    const key = varint(bytes, at);
    const [number, wire] = [Math.floor(key / 8), key % 8];
    if (wire === 0) found.push([number, varint(bytes, at)]);
    else if (wire === 2) {
      const length = varint(bytes, at);
      found.push([number, bytes.subarray(at.i, at.i + length)]);
      at.i += length;
    } else at.i += wire === 1 ? 8 : 4;
  }
  return found;
}

const utf8 = new TextDecoder();

function singleMetadata(bytes) {
  const meta = { properties: {}, payloadSize: 0 };
  for (const [number, value] of fields(bytes)) {
    if (number === 1) {
      const pair = Object.fromEntries(fields(value));
      meta.properties[utf8.decode(pair[1] || new Uint8Array())] = utf8.decode(pair[2] || new Uint8Array());
    } else if (number === 2) meta.key = utf8.decode(value);
    else if (number === 3) meta.payloadSize = value;
    else if (number === 5) meta.eventTime = value;
  }
  return meta;
}

function splitBatch(body, count) {
  const view = new DataView(body.buffer, body.byteOffset, body.byteLength);
  const messages = [];
  let at = 0;
  for (let index = 0; index < count && at + 4 <= body.length; index++) {
    const size = view.getUint32(at);
    const meta = singleMetadata(body.subarray(at + 4, at + 4 + size));
    at += 4 + size;
    messages.push({ ...meta, index, payload: body.subarray(at, at + meta.payloadSize) });
    at += meta.payloadSize;
  }
  return messages;
}

// -- one answer of the admin API -> its messages ---------------------------------------------
async function messagesOf(response) {
  const header = (name) => response.headers.get(name);
  const body = new Uint8Array(await response.arrayBuffer());
  const entry = {
    id: header("X-Pulsar-Message-ID"), publishTime: header("X-Pulsar-publish-time"),
    producer: header("X-Pulsar-producer-name"),
  };
  const batch = header("X-Pulsar-num-batch-message");
  if (batch !== null) return splitBatch(body, Number(batch)).map((m) => ({ ...entry, ...m, batchIndex: m.index }));
  return [{
    ...entry, key: header("X-Pulsar-partition-key") ?? undefined,
    properties: JSON.parse(header("X-Pulsar-PROPERTY") || "{}"), payload: body,
  }];
}

// -- showing a payload -------------------------------------------------------------------------
function asText(payload) {
  try {
    return new TextDecoder("utf-8", { fatal: true }).decode(payload);
  } catch (_) {
    return null;
  }
}

function asJson(payload) {
  const text = asText(payload);
  try {
    return text === null ? null : JSON.stringify(JSON.parse(text), null, 2);
  } catch (_) {
    return null;
  }
}

function asHex(payload) {
  const lines = [];
  for (let at = 0; at < payload.length; at += 16) {
    const row = payload.subarray(at, at + 16);
    const hex = Array.from(row, (b) => b.toString(16).padStart(2, "0")).join(" ");
    const ascii = Array.from(row, (b) => (b >= 32 && b < 127 ? String.fromCharCode(b) : ".")).join("");
    lines.push(`${at.toString(16).padStart(8, "0")}  ${hex.padEnd(47)}  ${ascii}`);
  }
  return lines.join("\n");
}

const VIEWS = { json: asJson, text: asText, hex: asHex };

function payloadView(payload) {
  const shown = h("pre", { class: "payload" });
  const buttons = {};
  const select = (kind) => {
    shown.textContent = VIEWS[kind](payload) ?? "";
    shown.dataset.view = kind;
    Object.entries(buttons).forEach(([name, button]) => button.classList.toggle("selected", name === kind));
  };
  for (const kind of Object.keys(VIEWS)) {
    buttons[kind] = h("button", { type: "button", class: `view-${kind}`, disabled: VIEWS[kind](payload) === null },
      kind.toUpperCase());
    buttons[kind].addEventListener("click", () => select(kind));
  }
  select(asJson(payload) !== null ? "json" : asText(payload) !== null ? "text" : "hex");
  return h("div", {}, h("div", { class: "views" }, Object.values(buttons)), shown);
}

function messageCard(message) {
  const id = message.batchIndex === undefined ? message.id : `${message.id} #${message.batchIndex}`;
  const properties = Object.entries(message.properties || {});
  return h("article", { class: "message", "data-id": message.id },
    h("dl", {},
      h("dt", {}, "id"), h("dd", { class: "id" }, id),
      h("dt", {}, "published"), h("dd", {}, message.publishTime || ""),
      h("dt", {}, "producer"), h("dd", {}, message.producer || ""),
      h("dt", {}, "key"), h("dd", { class: "key" }, message.key ?? "(none)"),
      h("dt", {}, "properties"),
      h("dd", { class: "properties" }, properties.length ? properties.map(([k, v]) => `${k}=${v}`).join(", ") : "(none)"),
      h("dt", {}, "size"), h("dd", {}, `${message.payload.length} bytes`)),
    payloadView(message.payload));
}

// -- the section ---------------------------------------------------------------------------------
export function messagesSection(base, subscriptions) {
  const results = h("div", { class: "messages" });
  const show = (cards) => results.replaceChildren(...(cards.length ? cards : [h("p", { class: "empty" }, "no messages")]));
  const peek = actionForm("Peek", [
    h("label", {}, "subscription", h("select", { name: "subscription" },
      subscriptions.map((name) => h("option", { value: name }, name)))),
    h("label", {}, "next", h("input", { name: "count", type: "number", min: 1, max: 100, value: 10 })),
  ], async (form) => {
    const cards = [];
    for (let position = 1; position <= Number(form.count.value); position++) {
      let response;
      try {
        response = await getRaw(`${base}/subscription/${seg(form.subscription.value)}/position/${position}`);
      } catch (error) {
        if (error.status === 404) break;   // the backlog ends here
        throw error;
      }
      cards.push(...(await messagesOf(response)).map(messageCard));
    }
    show(cards);
    return `${cards.length} messages`;
  }, { id: "peek" });
  const byId = actionForm("Look up", [
    h("label", {}, "message id (ledger:entry)", h("input", { name: "id", required: true, pattern: "\\d+:\\d+(:.*)?" })),
  ], async (form) => {
    const [ledger, entry] = form.id.value.trim().split(":");
    try {
      show((await messagesOf(await getRaw(`${base}/ledger/${ledger}/entry/${entry}`))).map(messageCard));
    } catch (error) {
      results.replaceChildren(failure(error));
      return false;
    }
    return "found";
  }, { id: "message-by-id" });
  if (!subscriptions.length) peek.replaceChildren(h("span", {}, "Peeking needs a subscription."));
  return h("section", {}, h("h2", {}, "Messages"), peek, byId, results);
}
