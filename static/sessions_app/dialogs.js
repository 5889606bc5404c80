// @ts-check
// Dialogs: Enter runs the primary (submit) action, Escape or Cancel closes without acting, and focus goes
// back where it was. confirmAction builds a confirmation for destructive actions on the fly.

import { el } from "./api.js";


// Cancel buttons are type=button, so the implicit submission of Enter always picks the primary one.
document.addEventListener("click", (event) => {
  const cancel = /** @type {Element} */ (event.target).closest("dialog [data-cancel]");
  if (cancel) /** @type {HTMLDialogElement} */ (cancel.closest("dialog")).close("cancel");
});

// Open ``dialog`` (element or id) and resolve to its form when confirmed, or null when cancelled.
/**
 * @param {HTMLDialogElement | string} dialog one that holds a form
 * @param {(form: Piweb.NamedForm) => void} [prepare]
 * @returns {Promise<Piweb.NamedForm | null>}
 */
export function ask(dialog, prepare) {
  if (typeof dialog === "string") dialog = /** @type {HTMLDialogElement} */ (document.getElementById(dialog));
  const form = /** @type {Piweb.NamedForm} */ (dialog.querySelector("form"));
  const opener = /** @type {HTMLElement} */ (document.activeElement);
  form.reset();
  if (prepare) prepare(form);
  dialog.returnValue = "";
  dialog.showModal();
  // The control marked autofocus (a dialog whose fields are optional focuses its primary button), else
  // the first field that takes text.
  /** @type {HTMLElement | null} */
  const first = form.querySelector("[autofocus]") || form.querySelector("input:not([type=hidden]):not([type=checkbox]), textarea, select");
  if (first) first.focus();
  return new Promise((resolve) => {
    dialog.addEventListener(
      "close",
      () => {
        if (opener && opener.isConnected && typeof opener.focus === "function") opener.focus();
        resolve(dialog.returnValue === "ok" ? form : null);
      },
      { once: true },
    );
  });
}

// Ask before doing something that cannot be undone; resolves true when confirmed.
export async function confirmAction({ title, text, confirm = "OK", danger = true }) {
  let dialog = /** @type {HTMLDialogElement | null} */ (document.getElementById("confirm-action-dialog"));
  if (!dialog) {
    dialog = el(
      "dialog",
      { id: "confirm-action-dialog", "aria-labelledby": "confirm-action-title" },
      el(
        "form",
        { method: "dialog", class: "stack" },
        el("h3", { id: "confirm-action-title" }),
        el("p", { class: "muted small", id: "confirm-action-text" }),
        el(
          "div",
          { class: "buttons" },
          el("button", { type: "button", "data-cancel": true, text: "Cancel" }),
          el("button", { type: "submit", value: "ok", id: "confirm-action-ok", class: "primary" }),
        ),
      ),
    );
    document.body.appendChild(dialog);
  }
  const form = await ask(dialog, () => {
    // The dialog built above has these.
    /** @type {HTMLElement} */ (document.getElementById("confirm-action-title")).textContent = title;
    /** @type {HTMLElement} */ (document.getElementById("confirm-action-text")).textContent = text || "";
    const ok = /** @type {HTMLElement} */ (document.getElementById("confirm-action-ok"));
    ok.textContent = confirm;
    ok.classList.toggle("danger", danger);
    setTimeout(() => ok.focus(), 0);
  });
  return form !== null;
}

// Copy text and say so next to the button (the Clipboard API needs a secure context; fall back).
/**
 * @param {string} text
 * @param {HTMLElement | null} [button]
 * @param {HTMLElement | null} [status]
 */
export async function copyText(text, button, status) {
  let done = false;
  try {
    if (navigator.clipboard && window.isSecureContext) {
      await navigator.clipboard.writeText(text);
      done = true;
    }
  } catch (_) {
    done = false;
  }
  if (!done) {
    const area = el("textarea", { class: "visually-hidden", "aria-hidden": "true" });
    area.value = text;
    document.body.appendChild(area);
    area.select();
    try {
      done = document.execCommand("copy");
    } catch (_) {
      done = false;
    }
    area.remove();
  }
  const message = done ? "Copied" : "Press Ctrl+C to copy";
  if (button) {
    const before = button.dataset.label || button.textContent;
    button.dataset.label = before;
    button.textContent = done ? "Copied ✓" : before;
    setTimeout(() => (button.textContent = before), 1600);
  }
  if (status) {
    status.textContent = message;
    setTimeout(() => (status.textContent = ""), 2500);
  }
  return done;
}
