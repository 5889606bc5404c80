// @ts-check
// "Run on…": the composer's choice between piweb's own loop (no tools) and Pi on one of the user's
// runners, in one of its workspaces, with Pi's own tools. The runners come from the server when the page
// opens; an offline one is listed, not offered.
import { api, el } from "../api.js";
import { $, base, cfg } from "./page.js";

/** @type {Array<{id: number, name: string, online: boolean, workspaces: string[], models: string[], piVersion: string | null, team: {name: string} | null}>} */
export let runners = [];

/** The runner and workspace chosen in the composer, or null for piweb's own loop. */
export function remoteTarget() {
  const picker = /** @type {HTMLSelectElement | null} */ ($("composer-where"));
  if (!picker || !picker.value) return null;
  const [runnerId, ...rest] = picker.value.split("|");
  return { runnerId: Number(runnerId), workspace: rest.join("|") };
}

/** Load the runners this user may run this session on; resolves to how many are there. */
export async function loadRunners() {
  if (!cfg.canEdit || cfg.readOnly) return 0;
  try {
    const { body } = await api("GET", `${base}/runners/`);
    runners = Array.isArray(body.results) ? body.results : [];
  } catch (_) {
    runners = [];
  }
  if (!runners.length) return 0;
  const picker = el("select", { id: "composer-where" });
  if ((cfg.models || []).length) picker.appendChild(el("option", { value: "", text: "piweb (no tools)" }));
  for (const runner of runners) {
    const owner = runner.team ? ` (${runner.team.name})` : "";
    for (const workspace of runner.workspaces) {
      const state = runner.online ? `Pi ${runner.piVersion || ""}`.trim() : "offline";
      picker.appendChild(
        el("option", {
          value: `${runner.id}|${workspace}`,
          text: `${runner.name}${owner} · ${workspace} · ${state}`,
          disabled: !runner.online,
        }),
      );
    }
  }
  $("composer-pickers").prepend(el("label", {}, "Run on ", picker));
  picker.addEventListener("change", () => document.dispatchEvent(new CustomEvent("piweb:where")));
  return runners.length;
}

/** The models Pi offers on the chosen runner (``provider/id``), or null when piweb's own loop is chosen. */
export function targetModels() {
  const target = remoteTarget();
  if (!target) return null;
  const runner = runners.find((r) => r.id === target.runnerId);
  return runner ? runner.models || [] : [];
}
