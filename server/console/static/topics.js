// A table of topics with their stats: rates in and out, storage, backlog over subscriptions.

import { getJson, topicPath } from "./api.js";
import { bytes, count, failure, h, link, rate, table } from "./dom.js";

const SHOWN = 200;   // the stats of this many topics are fetched at most, per table

export function topicHref(name) {
  const [domain, rest] = name.split("://");
  return `#/topic/${domain}/${rest.split("/").map(encodeURIComponent).join("/")}`;
}

export const backlogOf = (stats) =>
  Object.values(stats.subscriptions || {}).reduce((sum, sub) => sum + (sub.msgBacklog || 0), 0);

const consumersOf = (stats) =>
  Object.values(stats.subscriptions || {}).reduce((sum, sub) => sum + (sub.consumers || []).length, 0);

async function statsOf(name) {
  try {
    return { name, stats: await getJson(`${topicPath(name)}/stats`) };
  } catch (error) {
    return { name, error };
  }
}

export async function topicsTable(names) {
  const rows = await Promise.all(names.slice(0, SHOWN).map(statsOf));
  const refused = rows.find((row) => row.error && row.error.refused);
  if (refused && rows.every((row) => row.error)) return failure(refused.error);
  const stat = (read) => (row) => (row.error ? "—" : read(row.stats));
  const columns = [
    ["Topic", (row) => link(topicHref(row.name), row.name), "name"],
    ["Producers", stat((s) => count((s.publishers || []).length)), "producers num"],
    ["Subscriptions", stat((s) => count(Object.keys(s.subscriptions || {}).length)), "subscriptions num"],
    ["Consumers", stat((s) => count(consumersOf(s))), "consumers num"],
    ["In msg/s", stat((s) => rate(s.msgRateIn)), "rate-in num"],
    ["Out msg/s", stat((s) => rate(s.msgRateOut)), "rate-out num"],
    ["Storage", stat((s) => bytes(s.storageSize)), "storage num"],
    ["Backlog", stat((s) => count(backlogOf(s))), "backlog num"],
  ];
  const more = names.length > SHOWN ? h("p", {}, `${names.length - SHOWN} more topics not shown`) : null;
  return h("div", {}, table(columns, rows, (row) => ({ "data-topic": row.name }), "no topics"), more);
}

// The topics of a namespace, persistent and non-persistent.
export async function namespaceTopics(namespace) {
  const lists = await Promise.all(["persistent", "non-persistent"].map((domain) =>
    getJson(`/admin/v2/${domain}/${namespace}`)));
  return lists.flat().sort();
}
