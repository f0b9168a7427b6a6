// The admin REST API of this broker, with the token the user gave (kept for the browser tab).

const TOKEN_KEY = "pulsard-console-token";

export class ApiError extends Error {
  constructor(status, reason) {
    super(reason);
    this.status = status;
    this.reason = reason;
  }
  get refused() {
    return this.status === 401 || this.status === 403;
  }
}

export const token = {
  get: () => sessionStorage.getItem(TOKEN_KEY) || "",
  set: (value) => (value ? sessionStorage.setItem(TOKEN_KEY, value) : sessionStorage.removeItem(TOKEN_KEY)),
};

async function call(method, path, body) {
  const headers = {};
  if (token.get()) headers.Authorization = `Bearer ${token.get()}`;
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const response = await fetch(path, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (!response.ok) {
    const text = await response.text();
    let reason = text;
    try {
      reason = JSON.parse(text).reason || text;
    } catch (_) { /* a plain-text answer */ }
    throw new ApiError(response.status, reason || response.statusText);
  }
  return response;
}

export async function getJson(path) {
  return (await call("GET", path)).json();
}

export async function getRaw(path) {
  return call("GET", path);
}

export async function send(method, path, body) {
  const response = await call(method, path, body);
  const text = await response.text();
  return text ? JSON.parse(text) : null;
}

// "persistent://t/ns/local" -> its admin path /admin/v2/persistent/t/ns/local (name escaped).
export function topicPath(name) {
  const [domain, rest] = name.split("://");
  const [tenant, namespace, ...local] = rest.split("/");
  return `/admin/v2/${domain}/${tenant}/${namespace}/${encodeURIComponent(local.join("/"))}`;
}

export const seg = encodeURIComponent;
