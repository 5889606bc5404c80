// @ts-check
// The composer: disabled with the reason and what to do when it cannot send; Enter sends, Shift+Enter
// adds a line; the model and thinking level go with the prompt, and so do attached pictures (chosen or
// pasted), shown as thumbnails until sent. It is one line until used, so the branch keeps the column.
import { api, clear, el } from "../api.js";
import { imageBlock, pictureProblem } from "../attachments.js";
import { confirmAction } from "../dialogs.js";
import { icon } from "../icons.js";
import { $, base, cfg, showError } from "./page.js";
import { loadRunners, remoteTarget, targetModels } from "./runners.js";
import { currentRun, repaint, runActive, runStarted } from "./steering.js";

const composer = /** @type {HTMLTextAreaElement} */ ($("composer-text"));
let attached = []; // {name, block}

function drawAttachments() {
  const list = $("composer-attachments");
  clear(list);
  list.hidden = !attached.length;
  attached.forEach((item, index) => {
    const remove = el("button", { type: "button", class: "icon", text: "×", "aria-label": `Remove ${item.name}`, title: "Remove" });
    remove.addEventListener("click", () => {
      attached.splice(index, 1);
      drawAttachments();
      composer.focus();
    });
    const thumb = el("img", { alt: item.name, src: `data:${item.block.mimeType};base64,${item.block.data}` });
    list.appendChild(el("li", {}, thumb, remove));
  });
}

function readAsDataUrl(file) {
  return new Promise((resolve, reject) => {
    const reader = new FileReader();
    reader.onload = () => resolve(reader.result);
    reader.onerror = () => reject(reader.error);
    reader.readAsDataURL(file);
  });
}

async function attach(files) {
  for (const file of files) {
    const problem = pictureProblem(file, { attached: attached.length, maxBytes: cfg.maxImageBytes, maxCount: cfg.maxImages });
    if (problem) {
      $("composer-note").textContent = problem;
      continue;
    }
    const block = imageBlock(await readAsDataUrl(file));
    if (block) attached.push({ name: file.name || "pasted picture", block });
  }
  drawAttachments();
}

// A draft keeps the box open after it loses focus (CSS opens it while focused).
function markFilled() {
  composer.classList.toggle("filled", composer.value !== "");
}

export function setEditor(text) {
  if (typeof text === "string") {
    composer.value = text;
    markFilled();
    composer.focus();
  }
}

export function initComposer() {
  const send = /** @type {HTMLButtonElement} */ ($("composer-send"));
  const modelPicker = /** @type {HTMLSelectElement} */ ($("composer-model"));
  const thinkingPicker = /** @type {HTMLSelectElement} */ ($("composer-thinking"));
  function composerOff(reason) {
    send.disabled = true;
    composer.disabled = true;
    $("composer-pickers").hidden = true;
    $("composer-attach").hidden = true;
    $("composer-off").textContent = reason;
    $("composer-off").hidden = false;
  }
  if (!cfg.canEdit) {
    composerOff(cfg.readOnly ? "A read-only link: you can read, search and export this session, not add to it. To continue it, ask its owner to share it with you, then fork it." : "You can read this session but not add to it. Ask its owner for edit access, or fork it to continue in your own copy.");
  } else if (!(cfg.models || []).length) {
    composerOff(cfg.isStaff ? "No model is configured, so prompts cannot be sent. Add a model provider in the admin (Admin → LLM providers)." : "No model is configured, so prompts cannot be sent. Ask an administrator to add a model provider.");
  } else {
    serverModels();
  }
  // The model picker lists what answers where the prompt goes: piweb's providers, or Pi's models there.
  function serverModels() {
    clear(modelPicker);
    for (const model of cfg.models || []) modelPicker.appendChild(el("option", { value: model.id, text: `${model.name} (${model.provider}/${model.modelId})` }));
  }
  document.addEventListener("piweb:where", () => {
    const models = targetModels();
    if (models === null) {
      serverModels();
      modelPicker.closest("label")?.toggleAttribute("hidden", !(cfg.models || []).length);
      return;
    }
    clear(modelPicker);
    modelPicker.appendChild(el("option", { value: "", text: "Pi's default" }));
    for (const model of models) modelPicker.appendChild(el("option", { value: model, text: model }));
    modelPicker.closest("label")?.removeAttribute("hidden");
  });
  if (cfg.canEdit) {
    // Pi on a runner answers without a model configured here: its own models do.
    loadRunners().then((count) => {
      if (!count) return;
      if (!(cfg.models || []).length) {
        composer.disabled = false;
        $("composer-pickers").hidden = false;
        $("composer-off").hidden = true;
      }
      document.dispatchEvent(new CustomEvent("piweb:where"));
      repaint();
    });
    $("composer-follow").addEventListener("click", () => messageRun("follow-up"));
  }
  $("composer-attach").prepend(icon("attach"));
  composer.addEventListener("input", markFilled);
  $("composer-file").addEventListener("change", async (event) => {
    $("composer-note").textContent = "";
    const picker = /** @type {HTMLInputElement} */ (event.target);
    await attach([.../** @type {FileList} */ (picker.files)]);
    picker.value = ""; // the same file may be chosen again after removing it
  });
  composer.addEventListener("paste", (event) => {
    const pictures = [...(event.clipboardData ? event.clipboardData.files : [])].filter((f) => f.type.startsWith("image/"));
    if (!pictures.length) return;
    event.preventDefault();
    attach(pictures);
  });
  composer.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      (/** @type {HTMLFormElement} */ ($("composer"))).requestSubmit();
    }
  });
  $("composer").addEventListener("submit", async (event) => {
    event.preventDefault();
    const text = composer.value.trim();
    if (!text && attached.length) {
      $("composer-note").textContent = "Say something about the picture: a message needs words as well.";
      return;
    }
    if (!text || !cfg.runsUrl || send.disabled) return;
    if (currentRun().active && currentRun().remote) {
      await messageRun("steer");
      return;
    }
    const target = remoteTarget();
    if (target && attached.length) {
      $("composer-note").textContent = "Pictures go to piweb's own loop only: choose it in Run on, or remove them.";
      return;
    }
    send.disabled = true;
    if (!(await secretsCleared(text))) {
      send.disabled = runActive();
      return;
    }
    $("composer-note").textContent = "Sending…";
    try {
      // A run continues from the session's leaf; "Continue here" on a node moves the leaf first.
      /** @type {Record<string, any>} */
      const body = target ? { ...target, prompt: text } : { prompt: text };
      if (modelPicker.value) {
        if (target) body.model = modelPicker.value;
        else body.providerId = Number(modelPicker.value);
      }
      if (thinkingPicker.value) body.thinkingLevel = thinkingPicker.value;
      if (attached.length) body.images = attached.map(({ block }) => ({ data: block.data, mimeType: block.mimeType }));
      const { body: answer } = await api("POST", target ? `${base}/runs/remote/` : cfg.runsUrl, body);
      composer.value = "";
      markFilled();
      attached = [];
      drawAttachments();
      $("composer-note").textContent = "";
      runStarted(answer.runId, { mine: true, remote: Boolean(target) });
    } catch (error) {
      $("composer-note").textContent = "";
      if (error.status === 409) runStarted(error.body && error.body.activeRunId);
      showError(error.message);
    } finally {
      send.disabled = runActive(); // Send comes back when the run ends (steering.js)
    }
  });
}

// A prompt leaves for the provider as it is: say so before a secret goes with it. Unreachable check: send.
/** @param {string} text */
async function secretsCleared(text) {
  let found = [];
  try {
    found = (await api("POST", "/api/secrets/check/", { text })).body.secrets;
  } catch {
    return true;
  }
  if (!found.length) return true;
  const kinds = [...new Set(found.map((/** @type {{kind: string}} */ s) => s.kind))].join(", ");
  return confirmAction({
    title: found.length === 1 ? "This prompt holds a secret" : `This prompt holds ${found.length} secrets`,
    text: `It looks like ${kinds}. The provider receives the prompt as it is, and the session keeps it. Send it anyway?`,
    confirm: "Send anyway",
  });
}

/**
 * Steer the run on a runner (Pi reads it after its current step) or queue a follow-up (after the run).
 * @param {"steer" | "follow-up"} kind
 */
async function messageRun(kind) {
  const text = composer.value.trim();
  const { id, active, remote } = currentRun();
  if (!text || !id || !active || !remote) return;
  try {
    await api("POST", `/api/runs/${id}/${kind}/`, { message: text });
    composer.value = "";
    markFilled();
    $("composer-note").textContent = kind === "steer" ? "Sent: Pi reads it after its current step." : "Queued: Pi takes it up when it is done.";
  } catch (error) {
    showError(error.message);
  }
}
