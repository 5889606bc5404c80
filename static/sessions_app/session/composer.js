// The composer: disabled with the reason and what to do when it cannot send; Enter sends, Shift+Enter
// adds a line; the model and thinking level go with the prompt.
import { api, el } from "../api.js";
import { $, cfg, showError } from "./page.js";
import { runActive, runStarted } from "./steering.js";

const composer = $("composer-text");

export function setEditor(text) {
  if (typeof text === "string") {
    composer.value = text;
    composer.focus();
  }
}

export function initComposer() {
  const send = $("composer-send");
  const modelPicker = $("composer-model");
  const thinkingPicker = $("composer-thinking");
  function composerOff(reason) {
    send.disabled = true;
    composer.disabled = true;
    $("composer-pickers").hidden = true;
    $("composer-off").textContent = reason;
    $("composer-off").hidden = false;
  }
  if (!cfg.canEdit) {
    composerOff(cfg.readOnly ? "A read-only link: you can read, search and export this session, not add to it. To continue it, ask its owner to share it with you, then fork it." : "You can read this session but not add to it. Ask its owner for edit access, or fork it to continue in your own copy.");
  } else if (!(cfg.models || []).length) {
    composerOff(cfg.isStaff ? "No model is configured, so prompts cannot be sent. Add a model provider in the admin (Admin → LLM providers)." : "No model is configured, so prompts cannot be sent. Ask an administrator to add a model provider.");
  } else {
    for (const model of cfg.models) modelPicker.appendChild(el("option", { value: model.id, text: `${model.name} (${model.provider}/${model.modelId})` }));
  }
  composer.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      $("composer").requestSubmit();
    }
  });
  $("composer").addEventListener("submit", async (event) => {
    event.preventDefault();
    const text = composer.value.trim();
    if (!text || !cfg.runsUrl || send.disabled) return;
    send.disabled = true;
    $("composer-note").textContent = "Sending…";
    try {
      // A run continues from the session's leaf; "Continue here" on a node moves the leaf first.
      const body = { prompt: text };
      if (modelPicker.value) body.providerId = Number(modelPicker.value);
      if (thinkingPicker.value) body.thinkingLevel = thinkingPicker.value;
      const { body: answer } = await api("POST", cfg.runsUrl, body);
      composer.value = "";
      $("composer-note").textContent = "";
      runStarted(answer.runId, { mine: true });
    } catch (error) {
      $("composer-note").textContent = "";
      if (error.status === 409) runStarted(error.body && error.body.activeRunId);
      showError(error.message);
    } finally {
      send.disabled = runActive(); // Send comes back when the run ends (steering.js)
    }
  });
}
