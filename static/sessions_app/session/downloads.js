// @ts-check
// The download dialog: the Pi file, or the branch to the selected entry or the whole tree as Markdown or
// a standalone web page. The download is a plain link, so the browser saves it as any file.
import { DOWNLOAD_FORMATS, downloadUrl } from "../download_links.js";
import { $, cfg, state } from "./page.js";

/** @param {Piweb.NamedForm} form */
function update(form) {
  const format = form.elements.format.value;
  const scoped = DOWNLOAD_FORMATS[/** @type {keyof typeof DOWNLOAD_FORMATS} */ (format)].scoped;
  const at = state.selectedId || state.leafId;
  /** @type {HTMLFieldSetElement} */ ($("export-scope")).disabled = !scoped;
  $("export-branch-text").textContent = at ? `The branch from the root to ${at}` : "The branch from the root to the leaf";
  $("export-note").textContent = scoped
    ? "Rendered as on this page: Markdown, highlighted code, tool calls, pictures."
    : "Every entry you can see, byte for byte; Pi resumes it at the session's leaf.";
  (/** @type {HTMLAnchorElement} */ ($("export-download"))).href = downloadUrl({ session: cfg.session, format, scope: form.elements.scope.value, at, link: cfg.shareToken });
}

export function initDownloads() {
  const dialog = /** @type {HTMLDialogElement} */ ($("export-dialog"));
  const form = /** @type {Piweb.NamedForm} */ (dialog.querySelector("form"));
  form.addEventListener("change", () => update(form));
  $("export-button").addEventListener("click", () => {
    update(form);
    dialog.showModal();
    /** @type {HTMLSelectElement} */ (form.elements.format).focus();
  });
  // The browser starts the download from the link; the dialog has done its work.
  $("export-download").addEventListener("click", () => setTimeout(() => dialog.close("ok"), 0));
}
