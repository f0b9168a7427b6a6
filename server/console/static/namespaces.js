// Tenants, their namespaces, and a namespace's policies and topics.

import { getJson, send } from "./api.js";
import { actionForm, failure, h, link, section, table } from "./dom.js";
import { policyForms } from "./policies.js";
import { namespaceTopics, topicHref, topicsTable } from "./topics.js";

const namespaceHref = (namespace) => `#/namespace/${namespace.split("/").map(encodeURIComponent).join("/")}`;

export async function tenantsPage(content) {
  content.append(h("h1", {}, "Tenants"));
  try {
    const tenants = await getJson("/admin/v2/tenants");
    const rows = await Promise.all(tenants.map(async (tenant) => {
      const seg = encodeURIComponent(tenant);
      const [info, namespaces] = await Promise.all([getJson(`/admin/v2/tenants/${seg}`),
        getJson(`/admin/v2/namespaces/${seg}`)]);
      return { tenant, info, namespaces };
    }));
    content.append(table([
      ["Tenant", (r) => r.tenant, "name"],
      ["Admin roles", (r) => (r.info.adminRoles || []).join(", "), ""],
      ["Allowed clusters", (r) => (r.info.allowedClusters || []).join(", "), ""],
      ["Namespaces", (r) => h("ul", {}, r.namespaces.map((ns) => h("li", {}, link(namespaceHref(ns), ns)))), ""],
    ], rows, (r) => ({ "data-tenant": r.tenant }), "no tenants"));
  } catch (error) {
    content.append(failure(error));
  }
}

function createTopicForm(namespace) {
  return actionForm("Create topic", [
    h("label", {}, "name", h("input", { name: "topic", required: true, pattern: "[^/]+" })),
    h("label", {}, "partitions (0 = not partitioned)",
      h("input", { name: "partitions", type: "number", min: 0, value: 0 })),
  ], async (form) => {
    const name = form.topic.value.trim();
    const partitions = Number(form.partitions.value);
    const path = `/admin/v2/persistent/${namespace}/${encodeURIComponent(name)}`;
    if (partitions > 0) await send("PUT", `${path}/partitions`, partitions);
    else await send("PUT", path);
    location.hash = partitions > 0 ? location.hash : topicHref(`persistent://${namespace}/${name}`);
    return `created persistent://${namespace}/${name}`;
  }, { id: "create-topic" });
}

function policiesList(policies) {
  const shown = Object.entries(policies).filter(([, value]) =>
    value !== null && !(typeof value === "object" && !Object.keys(value).length));
  return h("dl", { class: "policies" }, shown.map(([key, value]) =>
    [h("dt", {}, key), h("dd", {}, typeof value === "object" ? JSON.stringify(value) : String(value))]));
}

export async function namespacePage(content, tenant, ns) {
  const namespace = `${tenant}/${ns}`;
  const base = `/admin/v2/namespaces/${encodeURIComponent(tenant)}/${encodeURIComponent(ns)}`;
  content.append(h("h1", {}, `Namespace ${namespace}`));
  let policies;
  try {
    policies = await getJson(base);
  } catch (error) {
    content.append(failure(error));
    return;
  }
  const topics = section("Topics", h("p", {}, "Loading…"));
  content.append(topics, section("Create a topic", createTopicForm(namespace)), await policyForms(base, "namespace"),
    section("All policies", policiesList(policies)));
  try {
    topics.replaceChild(await topicsTable(await namespaceTopics(namespace)), topics.lastChild);
  } catch (error) {
    topics.replaceChild(failure(error), topics.lastChild);
  }
}
