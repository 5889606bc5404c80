// @ts-check
// The session page's pin star, team tags (added and removed here) and archive button.
import { api, clear, el } from "../sessions_app/api.js";

const config = /** @type {Piweb.OrganizeSessionConfig} */ (
  JSON.parse(/** @type {HTMLElement} */ (document.getElementById("organize-config")).textContent || "{}")
);
const base = `/api/sessions/${config.session}`;
let pinned = config.pinned;
let archived = config.archived;
/** @type {Piweb.OrganizeTag[]} */
let tags = [...config.tags];
const offered = new Map(config.offered.map((t) => [t.id, t]));

/** @param {unknown} error */
function report(error) {
  alert(/** @type {Error} */ (error).message);
}

const star = /** @type {HTMLButtonElement} */ (document.getElementById("pin-button"));
function drawStar() {
  star.textContent = pinned ? "★" : "☆";
  star.setAttribute("aria-pressed", String(pinned));
  star.title = pinned ? "Unpin" : "Pin for me";
  star.setAttribute("aria-label", pinned ? "Unpin this session" : "Pin this session");
}
drawStar();
star.addEventListener("click", async () => {
  try {
    await api(pinned ? "DELETE" : "POST", `${base}/pin/`);
    pinned = !pinned;
    drawStar();
  } catch (error) {
    report(error);
  }
});

const chips = /** @type {HTMLElement} */ (document.getElementById("session-tags"));
const adder = /** @type {HTMLSelectElement | null} */ (document.getElementById("add-tag"));
function drawTags() {
  clear(chips);
  for (const tag of tags) {
    const chip = el("span", { class: `tag badge-tag-${tag.colour} session-tag`, title: `${tag.teamName} tag` }, el("a", { href: `/?tag=${tag.id}` }, tag.name));
    if (offered.has(tag.id)) {
      chip.append(
        el("button", {
          type: "button",
          class: "remove-tag",
          "aria-label": `Remove the tag ${tag.name}`,
          text: "×",
          onclick: async () => {
            try {
              await api("DELETE", `${base}/tags/${tag.id}/`);
              tags = tags.filter((t) => t.id !== tag.id);
              drawTags();
            } catch (error) {
              report(error);
            }
          },
        }),
      );
    }
    chips.append(chip, " ");
  }
  if (adder) {
    const on = new Set(tags.map((t) => t.id));
    clear(adder).append(
      el("option", { value: "" }, "+ tag"),
      ...[...offered.values()].filter((t) => !on.has(t.id)).map((t) => el("option", { value: String(t.id) }, `${t.name} (${t.teamName})`)),
    );
  }
}
drawTags();
if (adder) {
  adder.addEventListener("change", async () => {
    const tag = offered.get(Number(adder.value));
    if (!tag) return;
    try {
      await api("POST", `${base}/tags/`, { tagId: tag.id });
      tags = [...tags, tag].sort((a, b) => a.name.localeCompare(b.name));
      drawTags();
    } catch (error) {
      report(error);
    }
  });
}

const archiveButton = /** @type {HTMLButtonElement | null} */ (document.getElementById("archive-button"));
if (archiveButton) {
  archiveButton.addEventListener("click", async () => {
    try {
      await api(archived ? "DELETE" : "POST", `${base}/archive/`);
      archived = !archived;
      archiveButton.textContent = archived ? "Restore" : "Archive";
      archiveButton.title = archived ? "Hidden from the session list: restore it there" : "Hide from the session list (nothing is deleted)";
    } catch (error) {
      report(error);
    }
  });
}
// Someone else tagged or untagged the session: show its tags as they are now.
document.addEventListener("piweb:socket", async (event) => {
  const message = event.detail;
  if (message.type !== "event" || message.event !== "organized") return;
  try {
    const { body } = await api("GET", `${base}/tags/`);
    tags = body.results;
    drawTags();
  } catch {
    // the tags shown stay as they were; a reload shows them
  }
});
document.body.dataset.organizeReady = "true";
