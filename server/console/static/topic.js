// One topic: its stats and live rates, producers, subscriptions with their consumers, the
// operator's actions (each an admin API call; destructive ones confirmed), messages, policies.

import { getJson, send, seg, topicPath } from "./api.js";
import { actionForm, bytes, confirmAction, count, failure, h, rate, section, table } from "./dom.js";
import { rateChart, sampleRates } from "./chart.js";
import { messagesSection } from "./messages.js";
import { policyForms } from "./policies.js";
import { backlogOf, topicHref } from "./topics.js";

const refresh = () => window.dispatchEvent(new HashChangeEvent("hashchange"));

// An action button: confirmed first when `question` is given, then the call, then the page anew.
function actionButton(label, question, call, attrs = {}) {
  const button = h("button", { type: "button", ...attrs }, label);
  button.addEventListener("click", async () => {
    if (question && !(await confirmAction(question))) return;
    try {
      await call();
      refresh();
    } catch (error) {
      button.after(failure(error));
    }
  });
  return button;
}

function summary(stats) {
  const items = [
    ["In msg/s", rate(stats.msgRateIn), "rate-in"], ["Out msg/s", rate(stats.msgRateOut), "rate-out"],
    ["In bytes/s", bytes(stats.msgThroughputIn), ""], ["Out bytes/s", bytes(stats.msgThroughputOut), ""],
    ["Messages in", count(stats.msgInCounter), "msg-in"], ["Messages out", count(stats.msgOutCounter), "msg-out"],
    ["Storage", bytes(stats.storageSize), "storage"], ["Backlog", count(backlogOf(stats)), "backlog"],
    ["Backlog size", bytes(stats.backlogSize), ""],
  ];
  return h("dl", { class: "summary" }, items.map(([name, value, cls]) => [h("dt", {}, name), h("dd", { class: cls }, value)]));
}

function subscriptionActions(base, name) {
  const sub = `${base}/subscription/${seg(name)}`;
  const skip = actionForm("Skip", [h("input", { name: "count", type: "number", min: 1, value: 1, "aria-label": "messages" })],
    async (form) => {
      const n = Number(form.count.value);
      if (!(await confirmAction(`Skip the next ${n} messages of subscription ${name}?`))) return false;
      await send("POST", `${sub}/skip/${n}`);
      refresh();
    }, { class: "action skip" });
  const reset = actionForm("Reset to", [h("input", { name: "time", type: "datetime-local", step: 1, required: true,
    "aria-label": "time" })], async (form) => {
    const millis = new Date(form.time.value).getTime();
    if (!(await confirmAction(`Move subscription ${name} to the first message published at or after ` +
      `${new Date(millis).toISOString()}?`))) return false;
    await send("POST", `${sub}/resetcursor/${millis}`);
    refresh();
  }, { class: "action reset" });
  return h("div", { class: "row-actions" },
    actionButton("Clear backlog", `Clear the whole backlog of subscription ${name}? Its messages are acknowledged.`,
      () => send("POST", `${sub}/skip_all`), { class: "clear-backlog danger" }), skip, reset);
}

function consumersTable(consumers) {
  return table([
    ["Consumer", (c) => c.consumerName, "name"],
    ["Address", (c) => c.address || "", ""],
    ["Permits", (c) => count(c.availablePermits), "permits num"],
    ["Unacked", (c) => count(c.unackedMessages), "unacked num"],
    ["Redeliver msg/s", (c) => rate(c.msgRateRedeliver), "redeliver num"],
    ["Blocked", (c) => (c.blockedConsumerOnUnackedMsgs ? "yes" : "no"), ""],
    ["Since", (c) => c.connectedSince || "", ""],
  ], consumers, () => ({}), "no consumers");
}

function subscriptionsSection(base, stats) {
  const entries = Object.entries(stats.subscriptions || {});
  const rows = entries.map(([name, sub]) => h("tbody", { "data-subscription": name },
    h("tr", {},
      h("td", { class: "name" }, name), h("td", { class: "type" }, sub.type),
      h("td", { class: "backlog num" }, count(sub.msgBacklog)), h("td", { class: "unacked num" }, count(sub.unackedMessages)),
      h("td", { class: "rate-out num" }, rate(sub.msgRateOut)), h("td", { class: "redeliver num" }, rate(sub.msgRateRedeliver)),
      h("td", {}, subscriptionActions(base, name))),
    h("tr", { class: "consumers" }, h("td", { colspan: 7 }, consumersTable(sub.consumers || [])))));
  const head = h("thead", {}, h("tr", {}, ["Subscription", "Type", "Backlog", "Unacked", "Out msg/s", "Redeliver msg/s",
    "Actions"].map((title) => h("th", {}, title))));
  return section("Subscriptions", entries.length ? h("table", { class: "subscriptions" }, head, ...rows)
    : h("p", { class: "empty" }, "no subscriptions"));
}

function producersSection(stats) {
  return section("Producers", table([
    ["Producer", (p) => p.producerName, "name"], ["Access mode", (p) => p.accessMode, ""],
    ["Address", (p) => p.address || "", ""], ["Client", (p) => p.clientVersion || "", ""],
  ], stats.publishers || [], () => ({}), "no producers"));
}

async function partitionedPage(content, name, base, partitions) {
  const stats = await getJson(`${base}/partitioned-stats`);
  content.append(
    h("div", { class: "toolbar" }, actionButton("Delete topic", `Delete ${name} and its ${partitions} partitions?`,
      async () => {
        await send("DELETE", `${base}/partitions`);
        location.hash = "#/";
      }, { class: "delete-topic danger" })),
    summary(stats),
    section("Partitions", h("ul", {}, Array.from({ length: partitions }, (_, i) =>
      h("li", {}, h("a", { href: topicHref(`${name}-partition-${i}`) }, `${name}-partition-${i}`))))));
}

export async function topicPage(content, domain, tenant, namespace, local) {
  const name = `${domain}://${tenant}/${namespace}/${local}`;
  const base = topicPath(name);
  content.append(h("h1", {}, name));
  try {
    const { partitions } = await getJson(`${base}/partitions`);
    if (partitions > 0) return await partitionedPage(content, name, base, partitions);
    const stats = await getJson(`${base}/stats`);
    const chart = rateChart([{ name: "in", cls: "in" }, { name: "out", cls: "out" }]);
    content.append(
      h("div", { class: "toolbar" },
        actionButton("Unload", null, () => send("PUT", `${base}/unload`), { class: "unload" }),
        actionButton("Delete topic", `Delete ${name}? Its messages and subscriptions are deleted.`, async () => {
          await send("DELETE", base);
          location.hash = `#/namespace/${seg(tenant)}/${seg(namespace)}`;
        }, { class: "delete-topic danger" })),
      summary(stats),
      section("Live throughput (msg/s, sampled every 2 s)", chart.element),
      subscriptionsSection(base, stats),
      producersSection(stats),
      messagesSection(base, Object.keys(stats.subscriptions || {})),
      await policyForms(base, "topic"));
    return sampleRates(chart, async () => {
      const now = await getJson(`${base}/stats`);
      return [now.msgInCounter, now.msgOutCounter];
    });
  } catch (error) {
    content.append(failure(error));
  }
}
