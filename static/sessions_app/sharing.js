// The owner's sharing panel: share with a team, create and revoke read-only links.
"use strict";

(function (Pi) {
  const el = Pi.el;
  const cfg = JSON.parse(document.getElementById("session-config").textContent);
  const base = `/api/sessions/${cfg.session}`;
  const panel = document.getElementById("sharing-panel");
  const sharesList = document.getElementById("team-shares");
  const linksList = document.getElementById("share-links");

  function fail(error) {
    const banner = document.getElementById("error-banner");
    banner.textContent = error.message;
    banner.hidden = false;
  }

  async function refresh() {
    const [shares, links] = await Promise.all([Pi.api("GET", `${base}/shares/`), Pi.api("GET", `${base}/links/`)]);
    Pi.clear(sharesList);
    for (const share of shares.body.results) {
      const stop = el("button", { type: "button", text: "Stop sharing" });
      stop.addEventListener("click", () =>
        Pi.api("DELETE", `${base}/shares/${share.teamId}/`).then(refresh).catch(fail),
      );
      sharesList.appendChild(el("li", {}, `${share.team} (${share.access}) `, stop));
    }
    Pi.clear(linksList);
    for (const link of links.body.results) {
      const item = el("li", { class: "share-link", dataset: { linkId: String(link.id) } });
      const what = `${link.scope}${link.frozenSeq !== null ? ", frozen" : ""}${link.expiresAt ? `, expires ${link.expiresAt}` : ""}`;
      item.appendChild(el("input", { type: "text", readonly: true, value: link.url, class: "mono", size: 50 }));
      item.appendChild(el("span", { class: "muted small", text: ` ${what} ` }));
      if (link.revokedAt) {
        item.appendChild(el("span", { class: "tag", text: "revoked" }));
      } else {
        const copy = el("button", { type: "button", text: "Copy" });
        copy.addEventListener("click", () => navigator.clipboard && navigator.clipboard.writeText(link.url));
        const revoke = el("button", { type: "button", class: "revoke-link", text: "Revoke" });
        revoke.addEventListener("click", () => Pi.api("DELETE", `/api/links/${link.id}/`).then(refresh).catch(fail));
        item.append(copy, " ", revoke);
      }
      linksList.appendChild(item);
    }
  }

  document.getElementById("sharing-button").addEventListener("click", () => {
    panel.hidden = !panel.hidden;
    if (!panel.hidden) refresh().catch(fail);
  });

  document.getElementById("team-share-form").addEventListener("submit", (event) => {
    event.preventDefault();
    const form = event.target;
    if (!form.elements.team.value) return;
    const body = { teamId: Number(form.elements.team.value), access: form.elements.access.value };
    Pi.api("POST", `${base}/shares/`, body).then(refresh).catch(fail);
  });

  document.getElementById("link-form").addEventListener("submit", (event) => {
    event.preventDefault();
    const form = event.target;
    const body = { scope: form.elements.scope.value, frozen: form.elements.frozen.checked };
    if (form.elements.expires.value) body.expiresAt = new Date(form.elements.expires.value).toISOString();
    Pi.api("POST", `${base}/links/`, body).then(refresh).catch(fail);
  });
})(window.Pi);
