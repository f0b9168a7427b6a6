// The console's entry: the #fragment picks the page; a page is rebuilt on every visit.

import { token } from "./api.js";
import { h } from "./dom.js";
import { clusterPage, overviewPage } from "./overview.js";
import { namespacePage, tenantsPage } from "./namespaces.js";
import { topicPage } from "./topic.js";

const ROUTES = [
  [/^#?\/?$/, overviewPage],
  [/^#\/cluster$/, clusterPage],
  [/^#\/tenants$/, tenantsPage],
  [/^#\/namespace\/([^/]+)\/([^/]+)$/, namespacePage],
  [/^#\/topic\/(persistent|non-persistent)\/([^/]+)\/([^/]+)\/(.+)$/, topicPage],
];

let leaving = () => {};   // what the page shown needs stopped (the chart's polling)
let shown = 0;            // pages started: one that ends after a newer one started is stopped

async function show() {
  leaving();
  leaving = () => {};
  const visit = ++shown;
  const main = document.getElementById("page");
  const hash = location.hash || "#/";
  for (const [pattern, page] of ROUTES) {
    const found = hash.match(pattern);
    if (!found) continue;
    const content = h("div", { class: "page" });
    main.replaceChildren(content);
    const stop = await page(content, ...found.slice(1).map(decodeURIComponent));
    if (typeof stop !== "function") return;
    if (visit === shown) leaving = stop;
    else stop();
    return;
  }
  main.replaceChildren(h("p", { class: "error" }, `No page at ${hash}`));
}

function signIn() {
  const field = document.getElementById("token");
  document.getElementById("sign-in").addEventListener("submit", (event) => {
    event.preventDefault();
    token.set(field.value.trim());
    field.value = "";
    show();
  });
  document.getElementById("sign-out").addEventListener("click", () => {
    token.set("");
    show();
  });
}

window.addEventListener("hashchange", show);
signIn();
show();
