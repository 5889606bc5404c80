// The import page: drop or choose a .jsonl file, upload it with a progress bar, show what was skipped.
"use strict";

(function (Pi) {
  const zone = document.getElementById("dropzone");
  const input = document.getElementById("file-input");
  const block = document.getElementById("import-progress");
  const bar = document.getElementById("progress-bar");
  const phase = document.getElementById("progress-phase");
  const fileLabel = document.getElementById("progress-file");
  const progressText = document.getElementById("progress-text");
  const result = document.getElementById("import-result");
  const el = Pi.el;

  function humanBytes(n) {
    if (n < 1024) return `${n} B`;
    if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KB`;
    return `${(n / 1024 / 1024).toFixed(1)} MB`;
  }

  function showResult(nodes, kind) {
    Pi.clear(result);
    result.className = "import-result " + kind;
    Pi.append(result, nodes);
    result.hidden = false;
  }

  function report(body) {
    const s = body.session;
    const title = s.name || s.piId;
    const summary = body.created
      ? `Imported ${s.entryCount} entries.`
      : body.appended > 0
        ? `Appended ${body.appended} new entries to the existing session.`
        : "This session is already stored; nothing changed.";
    const nodes = [
      el("p", {}, el("strong", { text: summary }), " ", el("a", { href: `/sessions/${s.id}/`, id: "open-imported", text: `Open “${title}”` })),
    ];
    if (body.migrated) nodes.push(el("p", { class: "muted", text: "The file was migrated from an older session format." }));
    // The server lists the first skipped lines and counts them all.
    const skipped = body.skippedLines || [];
    const total = body.skippedCount ?? skipped.length;
    if (total) {
      nodes.push(el("h3", { text: `${total} line${total === 1 ? "" : "s"} skipped` }));
      const rows = skipped.map((s) => el("tr", {}, el("td", { class: "num", text: s.line }), el("td", { text: s.reason })));
      nodes.push(el("table", { class: "skipped" }, el("thead", {}, el("tr", {}, el("th", { text: "Line" }), el("th", { text: "Reason" }))), el("tbody", {}, rows)));
      if (total > skipped.length) nodes.push(el("p", { class: "muted", text: `…and ${total - skipped.length} more.` }));
    } else {
      nodes.push(el("p", { class: "muted", text: "No lines were skipped." }));
    }
    showResult(nodes, "ok");
  }

  function upload(file) {
    if (!file) return;
    block.hidden = false;
    result.hidden = true;
    bar.value = 0;
    bar.max = 100;
    phase.textContent = "Uploading";
    fileLabel.textContent = file.name;
    progressText.textContent = `0 of ${humanBytes(file.size)}`;
    const form = new FormData();
    form.append("file", file, file.name);
    const xhr = new XMLHttpRequest();
    xhr.open("POST", "/api/sessions/import/");
    xhr.setRequestHeader("X-CSRFToken", Pi.csrfToken());
    xhr.setRequestHeader("Accept", "application/json");
    xhr.upload.addEventListener("progress", (event) => {
      if (!event.lengthComputable) return;
      // The upload is the first half of the bar; storing the entries is the second.
      bar.value = (event.loaded / event.total) * 50;
      progressText.textContent = `${humanBytes(event.loaded)} of ${humanBytes(event.total)}`;
    });
    xhr.upload.addEventListener("load", () => {
      phase.textContent = "Storing entries";
      progressText.textContent = "";
      bar.removeAttribute("value"); // indeterminate while the server parses and stores
    });
    xhr.addEventListener("load", () => {
      bar.max = 100;
      bar.value = 100;
      let body = null;
      try {
        body = JSON.parse(xhr.responseText);
      } catch (_) {
        body = null;
      }
      if (xhr.status >= 200 && xhr.status < 300 && body) {
        phase.textContent = "Done";
        report(body);
      } else {
        phase.textContent = "Failed";
        const message = (body && body.error) || `The server answered ${xhr.status}.`;
        showResult([el("p", { class: "error", role: "alert", text: message })], "failed");
      }
    });
    xhr.addEventListener("error", () => {
      phase.textContent = "Failed";
      showResult([el("p", { class: "error", role: "alert", text: "The upload was interrupted." })], "failed");
    });
    xhr.send(form);
  }

  input.addEventListener("change", () => upload(input.files[0]));
  zone.addEventListener("click", (event) => {
    if (event.target === input || event.target.closest("label")) return;
    input.click();
  });
  zone.addEventListener("keydown", (event) => {
    if (event.key === "Enter" || event.key === " ") input.click();
  });
  zone.addEventListener("dragover", (event) => {
    event.preventDefault();
    zone.classList.add("over");
  });
  zone.addEventListener("dragleave", () => zone.classList.remove("over"));
  zone.addEventListener("drop", (event) => {
    event.preventDefault();
    zone.classList.remove("over");
    upload(event.dataTransfer.files[0]);
  });
})(window.Pi);
