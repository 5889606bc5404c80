// @ts-check
// Where each export is downloaded from (named "download": Django's module-import rewriting misreads
// import paths containing the word "export"): the Pi file, or the branch or tree as Markdown or a web page.
// Pure: the session page's export dialog and the unit tests share it.

export const DOWNLOAD_FORMATS = {
  jsonl: { label: "Pi session file (.jsonl)", scoped: false },
  markdown: { label: "Markdown (.md)", scoped: true },
  html: { label: "Web page (.html), readable offline", scoped: true },
};

// `at` ends a branch (the selected entry); the Pi file always resumes at the session's leaf, and a
// tree has no end, so neither takes it. `link` is a share token the page was opened with.
/** @param {{ session: number, format?: string, scope?: string, at?: string | null, link?: string | null }} options */
export function downloadUrl({ session, format = "jsonl", scope = "branch", at = null, link = null }) {
  const params = new URLSearchParams();
  if (format !== "jsonl") {
    params.set("format", format);
    params.set("scope", scope);
    if (scope === "branch" && at) params.set("at", at);
  }
  if (link) params.set("link", link);
  const query = params.toString();
  return `/api/sessions/${session}/export/${query ? `?${query}` : ""}`;
}
