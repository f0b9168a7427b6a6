// The overview (brokers in brief, every topic with its backlog) and the cluster page.

import { getJson } from "./api.js";
import { bytes, count, failure, h, rate, section, table } from "./dom.js";
import { namespaceTopics, topicsTable } from "./topics.js";

async function allNamespaces() {
  const tenants = await getJson("/admin/v2/tenants");
  const lists = await Promise.all(tenants.map((tenant) => getJson(`/admin/v2/namespaces/${encodeURIComponent(tenant)}`)));
  return lists.flat().sort();
}

const percent = (usage) => (usage && usage.limit > 0 ? `${(100 * usage.usage / usage.limit).toFixed(1)} %` : "—");
const brokerName = (report) => (report.webServiceUrl || "").replace(/^https?:\/\//, "");

function brokersTable(reports) {
  return table([
    ["Broker", brokerName, "name"],
    ["Version", (r) => r.brokerVersionString || "", ""],
    ["CPU", (r) => percent(r.cpu), "num"],
    ["Memory", (r) => (r.memory ? `${r.memory.usage.toFixed(0)} MB` : "—"), "num"],
    ["In msg/s", (r) => rate(r.msgRateIn), "rate-in num"],
    ["Out msg/s", (r) => rate(r.msgRateOut), "rate-out num"],
    ["In bytes/s", (r) => bytes(r.msgThroughputIn), "num"],
    ["Out bytes/s", (r) => bytes(r.msgThroughputOut), "num"],
    ["Topics", (r) => count(r.numTopics), "topics num"],
    ["Producers", (r) => count(r.numProducers), "num"],
    ["Consumers", (r) => count(r.numConsumers), "num"],
    ["Bundles", (r) => (r.bundles && r.bundles.length ? count(r.bundles.length) : "all (standalone)"), "num"],
  ], reports, (r) => ({ "data-broker": brokerName(r) }));
}

async function guarded(build) {
  try {
    return await build();
  } catch (error) {
    return failure(error);
  }
}

export async function overviewPage(content) {
  content.append(h("h1", {}, "Overview"));
  const brokers = section("Brokers", h("p", {}, "Loading…"));
  const topics = section("Topics", h("p", {}, "Loading…"));
  brokers.classList.add("brokers");
  topics.classList.add("topics");
  content.append(brokers, topics);
  brokers.replaceChild(await guarded(async () => brokersTable(await getJson("/console/api/brokers"))),
    brokers.lastChild);
  topics.replaceChild(await guarded(async () => {
    const namespaces = await allNamespaces();
    const names = (await Promise.all(namespaces.map(namespaceTopics))).flat();
    return topicsTable(names);
  }), topics.lastChild);
}

export async function clusterPage(content) {
  content.append(h("h1", {}, "Cluster"));
  content.append(await guarded(async () => {
    const [clusters, reports] = await Promise.all([getJson("/admin/v2/clusters"), getJson("/console/api/brokers")]);
    const bundles = reports.filter((r) => (r.bundles || []).length).map((r) =>
      section(`Bundles owned by ${brokerName(r)}`,
        h("ul", { class: "bundles", "data-broker": brokerName(r) }, r.bundles.map((b) => h("li", {}, b)))));
    return h("div", {},
      h("p", {}, `Clusters: ${clusters.join(", ")}`),
      section("Brokers", brokersTable(reports)),
      ...bundles);
  }));
}
