// @ts-check
// Webhooks page (a person's or a team's): create one (its secret shown once), pause, resume, test,
// rotate the secret, delete; read a hook's delivery log and replay a delivery.
import { api, clear, el } from "../sessions_app/api.js";
import { confirmAction } from "../sessions_app/dialogs.js";

const config = /** @type {Piweb.HooksPageConfig} */ (JSON.parse(/** @type {HTMLElement} */ (document.getElementById("hooks-config")).textContent || "{}"));
const rows = /** @type {HTMLElement} */ (document.getElementById("hook-rows"));
const empty = /** @type {HTMLElement} */ (document.getElementById("hooks-empty"));
const errorLine = /** @type {HTMLElement} */ (document.getElementById("hooks-error"));
const secretBox = /** @type {HTMLElement} */ (document.getElementById("new-secret"));
const secretText = /** @type {HTMLElement} */ (document.getElementById("new-secret-text"));
const logCard = /** @type {HTMLElement} */ (document.getElementById("delivery-log"));
const logRows = /** @type {HTMLElement} */ (document.getElementById("delivery-rows"));
const older = /** @type {HTMLButtonElement} */ (document.getElementById("older"));
const eventBox = /** @type {HTMLElement} */ (document.getElementById("hook-events"));

/** @type {{ hook: Piweb.Hook | null, next: number | null }} */
const shown = { hook: null, next: null };

function fail(error) {
  errorLine.textContent = error.message;
}

function when(iso) {
  return iso ? new Date(iso).toLocaleString() : "—";
}

function showSecret(secret) {
  secretText.textContent = secret;
  secretBox.hidden = false;
}

for (const choice of config.events) {
  eventBox.appendChild(el("label", {}, el("input", { type: "checkbox", name: "events", value: choice.name }), ` ${choice.name}: ${choice.label}`));
}

/** @param {Piweb.Hook} hook */
function state(hook) {
  if (!hook.active) return el("span", { class: "tag", text: "paused" });
  if (hook.failingSince) return el("span", { class: "tag warning", text: `failing since ${when(hook.failingSince)}` });
  return el("span", { class: "tag", text: "active" });
}

/** @param {Piweb.Hook} hook @param {string} label @param {() => Promise<unknown>} action */
function button(hook, label, action) {
  return el("button", { type: "button", class: "small", text: label, dataset: { hook: String(hook.id) }, onclick: () => action().then(load).catch(fail) });
}

async function load() {
  try {
    const { body } = await api("GET", config.listUrl);
    clear(rows);
    empty.hidden = body.results.length > 0;
    for (const hook of /** @type {Piweb.Hook[]} */ (body.results)) {
      const counts = [hook.failedDeliveries ? `${hook.failedDeliveries} failed` : "", hook.pendingDeliveries ? `${hook.pendingDeliveries} waiting` : ""].filter(Boolean).join(", ");
      rows.appendChild(
        el(
          "tr",
          { dataset: { hook: hook.name } },
          el("td", {}, hook.name, el("div", { class: "muted small", text: `${hook.format} → ${hook.url}` })),
          el("td", { text: hook.events.join(", ") }),
          el("td", {}, state(hook), counts ? el("div", { class: "muted small", text: counts }) : null),
          el("td", { text: when(hook.lastDeliveredAt) }),
          el(
            "td",
            {},
            button(hook, "Deliveries", () => showLog(hook, null)),
            button(hook, "Send a test", () => api("POST", `/api/hooks/${hook.id}/ping/`)),
            button(hook, hook.active ? "Pause" : "Resume", () => api("PATCH", `/api/hooks/${hook.id}/`, { active: !hook.active })),
            button(hook, "New secret", async () => {
              const ok = await confirmAction({ title: `New secret for ${hook.name}?`, text: "The old secret stops signing at once: update the receiver.", confirm: "Rotate" });
              if (ok) showSecret((await api("POST", `/api/hooks/${hook.id}/rotate/`)).body.secret);
            }),
            button(hook, "Delete", async () => {
              const ok = await confirmAction({ title: `Delete the webhook ${hook.name}?`, text: "Its delivery log goes with it; nothing waiting is sent.", confirm: "Delete" });
              if (ok) await api("DELETE", `/api/hooks/${hook.id}/`);
              if (ok && shown.hook && shown.hook.id === hook.id) logCard.hidden = true;
            }),
          ),
        ),
      );
    }
    document.body.dataset.ready = "true";
  } catch (error) {
    fail(error);
  }
}

/** @param {Piweb.Hook} hook @param {number | null} before */
async function showLog(hook, before) {
  const { body } = await api("GET", `/api/hooks/${hook.id}/deliveries/${before ? `?before=${before}` : ""}`);
  if (!before) clear(logRows);
  shown.hook = hook;
  shown.next = body.next;
  older.hidden = !body.next;
  logCard.hidden = false;
  for (const d of /** @type {Piweb.HookDelivery[]} */ (body.results)) {
    const answer = d.lastStatusCode ? `HTTP ${d.lastStatusCode}` : d.lastError || "—";
    const replay = el("button", {
      type: "button",
      class: "small",
      text: "Replay",
      onclick: () => api("POST", `/api/hooks/${hook.id}/deliveries/${d.id}/replay/`).then(() => showLog(hook, null)).catch(fail),
    });
    logRows.appendChild(
      el(
        "tr",
        { dataset: { delivery: d.deliveryId } },
        el("td", {}, d.event, d.replayOf ? el("span", { class: "muted small", text: " (replay)" }) : null),
        el("td", {}, d.status, d.nextAttemptAt ? el("div", { class: "muted small", text: `next try ${when(d.nextAttemptAt)}` }) : null),
        el("td", { text: String(d.attempts) }),
        el("td", { title: d.lastResponse || d.lastError || "" }, answer),
        el("td", { text: d.responseMs === null ? "—" : `${d.responseMs} ms` }),
        el("td", { text: when(d.createdAt) }),
        el("td", {}, replay, el("details", {}, el("summary", { text: "Payload" }), el("pre", { text: JSON.stringify(d.payload, null, 2) }))),
      ),
    );
  }
}

older.addEventListener("click", () => {
  if (shown.hook && shown.next) showLog(shown.hook, shown.next).catch(fail);
});

/** @type {HTMLFormElement} */ (document.getElementById("hook-form")).addEventListener("submit", async (event) => {
  event.preventDefault();
  const form = /** @type {HTMLFormElement} */ (event.target);
  const data = new FormData(form);
  try {
    const { body } = await api("POST", config.listUrl, {
      name: String(data.get("name") || "").trim(),
      url: String(data.get("url") || "").trim(),
      format: String(data.get("format") || "json"),
      events: data.getAll("events").map(String),
    });
    showSecret(body.secret);
    form.reset();
    errorLine.textContent = "";
    await load();
  } catch (error) {
    fail(error);
  }
});

load();
