// @ts-check
// The owner's share dialog: share with a team, create, copy and revoke read-only links.
import { api, clear, el } from "./api.js";
import { ask, confirmAction, copyText } from "./dialogs.js";

// Wire the dialog on an owner's page (other pages have no #sharing-panel).
/** @param {number} sessionId */
export function initSharing(sessionId) {
  const base = `/api/sessions/${sessionId}`;
  // Typed as found: the functions below run only once the check has passed.
  const dialog = /** @type {HTMLDialogElement} */ (document.getElementById("sharing-panel"));
  if (!dialog) return;
  // The dialog's parts, and the page's banner.
  const byId = (/** @type {string} */ id) => /** @type {HTMLElement} */ (document.getElementById(id));
  const sharesList = byId("team-shares");
  const linksList = byId("share-links");
  const newLink = byId("new-link");

  function fail(error) {
    const banner = byId("error-banner");
    banner.textContent = error.message;
    banner.hidden = false;
  }

  function describe(link) {
    const parts = [link.scope === "path" ? "the current path" : "the whole tree", link.frozenSeq !== null ? "frozen" : "live"];
    if (link.expiresAt) parts.push(`expires ${new Date(link.expiresAt).toLocaleString()}`);
    return parts.join(" · ");
  }

  async function refresh() {
    const [shares, links] = await Promise.all([api("GET", `${base}/shares/`), api("GET", `${base}/links/`)]);
    clear(sharesList);
    for (const share of shares.body.results) {
      const stop = el("button", { type: "button", class: "danger", text: "Stop sharing" });
      stop.addEventListener("click", async () => {
        const ok = await confirmAction({ title: `Stop sharing with ${share.team}?`, text: "Its members lose access at once.", confirm: "Stop sharing" });
        if (ok) api("DELETE", `${base}/shares/${share.teamId}/`).then(refresh).catch(fail);
        if (!dialog.open) dialog.showModal();
      });
      sharesList.appendChild(el("li", {}, el("span", { text: `${share.team} · ${share.access === "editor" ? "can edit" : "can view"}` }), stop));
    }
    clear(linksList);
    // Only a hash of each token is kept: listed links are named by their prefix, never by an address.
    for (const link of links.body.results) {
      const item = el("li", { class: "share-link", dataset: { linkId: String(link.id), state: link.state } });
      const name = el("span", { class: "mono", text: `${link.tokenPrefix}…` });
      const about = el("span", { class: "muted small", text: describe(link) });
      if (link.state !== "active") {
        item.append(name, about, el("span", { class: "tag", text: link.state }));
      } else {
        const revoke = el("button", { type: "button", class: "revoke-link danger", text: "Revoke" });
        revoke.addEventListener("click", async () => {
          const ok = await confirmAction({ title: "Revoke this link?", text: "Everyone who has it loses access at once, including pages already open.", confirm: "Revoke" });
          if (!dialog.open) dialog.showModal();
          if (ok) api("DELETE", `/api/links/${link.id}/`).then(refresh).catch(fail);
        });
        item.append(name, about, el("span", { class: "tag", text: link.state }), revoke);
      }
      linksList.appendChild(item);
    }
  }

  // The answer to the create request is the only time the link's address exists outside its holders.
  function showNewLink(link) {
    clear(newLink);
    const status = el("span", { class: "copied", role: "status" });
    const copy = el("button", { type: "button", class: "copy-link", text: "Copy" });
    copy.addEventListener("click", () => copyText(link.url, copy, status));
    newLink.append(
      el("p", { class: "small", text: "Copy this link now: it is shown only once. Lists show only its first characters." }),
      el("div", { class: "copy-row" }, el("input", { type: "text", readonly: true, value: link.url, class: "mono", "aria-label": "New link address" }), copy),
      status,
    );
    newLink.hidden = false;
    /** @type {HTMLInputElement} */ (newLink.querySelector("input")).select();
  }

  // Before anything is shared: the secrets it would show, and the way to take them out first.
  const secretsNote = byId("share-secrets");
  async function warnOfSecrets() {
    const { body } = await api("GET", `${base}/secrets/`);
    const open = body.findings.filter((f) => !f.redacted);
    clear(secretsNote);
    secretsNote.hidden = open.length === 0;
    if (!open.length) return;
    const kinds = [...new Set(open.map((f) => f.kind))].join(", ");
    const redact = el("button", { type: "button", id: "share-redact-first", class: "danger", text: "Redact them first" });
    redact.addEventListener("click", async () => {
      redact.disabled = true;
      try {
        await api("POST", `${base}/secrets/redact/`, { all: true });
        await warnOfSecrets();
        document.dispatchEvent(new CustomEvent("piweb:secrets"));
      } catch (error) {
        fail(error);
      } finally {
        redact.disabled = false;
      }
    });
    const what = open.length === 1 ? "1 secret that is not redacted" : `${open.length} secrets that are not redacted`;
    secretsNote.append(
      el("p", { text: `This session holds ${what} (${kinds}). Anyone with a link to it, and every member of a team you share it with, would read them as they are.` }),
      el("div", {}, redact),
    );
  }

  byId("sharing-button").addEventListener("click", () => {
    clear(newLink);
    newLink.hidden = true;
    refresh().catch(fail);
    warnOfSecrets().catch(() => {
      secretsNote.hidden = true; // a teammate's page or a failed read: no claim either way
    });
    ask(dialog);
  });

  byId("team-share-submit").addEventListener("click", () => {
    const form = byId("team-share-form");
    const team = /** @type {HTMLSelectElement} */ (form.querySelector("[name=team]")).value;
    if (!team) return;
    const body = { teamId: Number(team), access: /** @type {HTMLSelectElement} */ (form.querySelector("[name=access]")).value };
    api("POST", `${base}/shares/`, body).then(refresh).catch(fail);
  });

  byId("link-submit").addEventListener("click", () => {
    const form = byId("link-form");
    const body = { scope: /** @type {HTMLSelectElement} */ (form.querySelector("[name=scope]")).value, frozen: /** @type {HTMLInputElement} */ (form.querySelector("[name=frozen]")).checked };
    const expires = /** @type {HTMLInputElement} */ (form.querySelector("[name=expires]")).value;
    if (expires) body.expiresAt = new Date(expires).toISOString();
    api("POST", `${base}/links/`, body)
      .then((made) => {
        showNewLink(made.body);
        return refresh();
      })
      .catch(fail);
  });
}
