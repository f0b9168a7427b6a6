// Building the page: elements, tables, numbers.

export function h(tag, attrs = {}, ...children) {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (name.startsWith("on")) element.addEventListener(name.slice(2), value);
    else element.setAttribute(name, value === true ? "" : value);
  }
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    element.append(child instanceof Node ? child : String(child));
  }
  return element;
}

// columns: [[heading, (row) => cell, className?]]; rowAttrs(row) gives each <tr>'s attributes.
export function table(columns, rows, rowAttrs = () => ({}), empty = "none") {
  if (!rows.length) return h("p", { class: "empty" }, empty);
  return h("table", {},
    h("thead", {}, h("tr", {}, columns.map(([heading, , cls]) => h("th", { class: cls }, heading)))),
    h("tbody", {}, rows.map((row) =>
      h("tr", rowAttrs(row), columns.map(([, cell, cls]) => h("td", { class: cls }, cell(row)))))));
}

export function section(title, ...children) {
  return h("section", {}, h("h2", {}, title), ...children);
}

export const link = (href, text) => h("a", { href }, text);

export const count = (n) => Number(n || 0).toLocaleString("en-US");
export const rate = (n) => Number(n || 0).toFixed(2);

export function bytes(n) {
  let value = Number(n || 0);
  for (const unit of ["B", "KiB", "MiB", "GiB"]) {
    if (value < 1024 || unit === "GiB") return unit === "B" ? `${Math.round(value)} B` : `${value.toFixed(1)} ${unit}`;
    value /= 1024;
  }
  return `${value} B`;
}

// An error of the admin API where the data would be: refusals (401, 403) said as such.
export function failure(error) {
  if (error.refused) {
    return h("p", { class: "refused" },
      `Not authorized (${error.status}): ${error.reason}. `,
      error.status === 401 ? "Sign in with a token above." : "Your role may not see this.");
  }
  return h("p", { class: "error" }, error.status ? `Error ${error.status}: ${error.reason}` : String(error));
}

// Ask before a destructive action; resolves true when the user confirms.
export function confirmAction(text) {
  const dialog = document.getElementById("confirm");
  dialog.querySelector(".message").textContent = text;
  dialog.showModal();
  return new Promise((resolve) => {
    dialog.addEventListener("close", () => resolve(dialog.returnValue === "ok"), { once: true });
  });
}

// A form that runs `action` on submit and says how it went in its status line.
export function actionForm(label, fields, action, attrs = {}) {
  const status = h("span", { class: "status" });
  const form = h("form", { class: "action", ...attrs }, ...fields, h("button", { type: "submit" }, label), status);
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    status.textContent = "…";
    status.className = "status";
    try {
      const done = await action(form);
      if (done === false) {
        status.textContent = "";
        return;
      }
      status.textContent = done || "done";
      status.className = "status ok";
    } catch (error) {
      status.textContent = error.refused ? `Not authorized (${error.status}): ${error.reason}`
        : `Failed: ${error.reason || error}`;
      status.className = "status error";
    }
  });
  return form;
}
