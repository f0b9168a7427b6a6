// Retention and message TTL, read and set at a namespace or a topic (the same REST names at both).

import { getJson, send } from "./api.js";
import { actionForm, h, section } from "./dom.js";

const number = (name, value, label) =>
  h("label", {}, label,
    h("input", { name, type: "number", step: "any", value: value ?? "", placeholder: "not set", required: true }));

// base: /admin/v2/namespaces/{t}/{ns} or a topic's admin path; shown: what GET answered.
export async function policyForms(base, level) {
  const read = async (path) => {
    try {
      return await getJson(`${base}/${path}`);
    } catch (_) {
      return null;
    }
  };
  const [retention, ttl] = await Promise.all([read("retention"), read("messageTTL")]);
  const current = retention || {};
  const retentionForm = actionForm("Set retention", [
    number("minutes", current.retentionTimeInMinutes, "time (minutes, -1 = no limit)"),
    number("megabytes", current.retentionSizeInMB, "size (MB, -1 = no limit)"),
  ], async (form) => {
    await send("POST", `${base}/retention`, {
      retentionTimeInMinutes: Number(form.minutes.value), retentionSizeInMB: Number(form.megabytes.value),
    });
    return "retention set";
  }, { id: "set-retention" });
  const ttlForm = actionForm("Set TTL", [number("seconds", ttl, "message TTL (seconds, 0 = none)")],
    async (form) => {
      await send("POST", `${base}/messageTTL`, Number(form.seconds.value));
      return "TTL set";
    }, { id: "set-ttl" });
  return section(`Retention and TTL of this ${level}`, retentionForm, ttlForm);
}
