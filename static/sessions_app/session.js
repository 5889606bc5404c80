// The session page: tree, branch and context panels kept in step, node actions, and live updates.
"use strict";

(function (Pi) {
  const el = Pi.el;
  const cfg = JSON.parse(document.getElementById("session-config").textContent);
  const base = `/api/sessions/${cfg.session}`;
  Pi.shareToken = cfg.shareToken || null;
  // Sessions up to this size are read whole in the background (search and previews everywhere);
  // bigger ones load entries only as they come into view.
  const PRELOAD_LIMIT = 20000;
  const PAGE = 5000;
  // The branch panel draws the newest part of the path first; "show older" extends it.
  const BRANCH_STEP = 150;
  const CONTEXT_DRAWN = 300; // context messages drawn (all are counted in the estimate)

  const state = {
    entries: new Map(),
    cursorId: null,
    lastSeq: -1,
    leafId: null,
    selectedId: null,
    full: cfg.entryCount <= PRELOAD_LIMIT,
    treeParams: {},
    window: cfg.contextWindow,
    nodes: new Map(),
    branchLimit: BRANCH_STEP,
  };

  const $ = (id) => document.getElementById(id);
  const branchBox = $("branch");
  const contextBox = $("context");
  const composer = $("composer-text");

  function showError(message) {
    const banner = $("error-banner");
    banner.textContent = message;
    banner.hidden = !message;
    if (message) setTimeout(() => banner.textContent === message && (banner.hidden = true), 8000);
  }

  function showOperation(text) {
    $("operation-text").textContent = text || "";
    $("operation-banner").hidden = !text;
  }

  // -- entries ------------------------------------------------------------------------------------------

  function remember(record) {
    state.entries.set(record.id, record);
    if (record.seq > state.lastSeq) state.lastSeq = record.seq;
  }

  async function loadEntriesSince() {
    for (;;) {
      const { body } = await Pi.api("GET", `${base}/entries/${Pi.query({ since: state.cursorId, limit: PAGE })}`);
      for (const record of body.entries) {
        if (record.id) {
          remember(record);
          state.cursorId = record.id;
        } else if (record.seq > state.lastSeq) {
          state.lastSeq = record.seq;
        }
      }
      if (body.lastSeq !== null && body.lastSeq > state.lastSeq && !body.hasMore) state.lastSeq = body.lastSeq;
      if (!body.hasMore) return;
    }
  }

  async function fetchEntry(id) {
    if (state.entries.has(id)) return state.entries.get(id);
    const { body } = await Pi.api("GET", `${base}/entries/${encodeURIComponent(id)}/`);
    state.entries.set(body.id, body);
    return body;
  }

  let wanted = new Set();
  let fetching = false;
  async function wantRecords(ids) {
    if (state.full) return;
    ids.forEach((id) => wanted.add(id));
    if (fetching) return;
    fetching = true;
    try {
      while (wanted.size) {
        const batch = [...wanted].slice(0, 4);
        batch.forEach((id) => wanted.delete(id));
        await Promise.all(batch.map((id) => fetchEntry(id).catch(() => null)));
        tree.render();
      }
    } finally {
      fetching = false;
    }
  }

  // -- tree ---------------------------------------------------------------------------------------------

  const tree = new Pi.TreeView({
    scroller: $("tree-scroll"),
    onSelect: (id) => select(id, { fromTree: true }),
    onActivate: (id) => {
      select(id, { fromTree: true });
      openNavigate();
    },
    onExpandRun: (run) => {
      state.treeParams = { around: run.firstId };
      loadTree().catch((e) => showError(e.message));
    },
    recordFor: (id) => state.entries.get(id),
    wantRecords,
  });

  async function loadTree() {
    const { body } = await Pi.api("GET", `${base}/tree/${Pi.query(state.treeParams)}`);
    state.leafId = body.leafId;
    state.nodes = new Map(body.items.filter((i) => i.kind === "node").map((i) => [i.id, i]));
    $("session-counts").textContent = `${body.entryCount.toLocaleString()} entries`;
    tree.selectedId = state.selectedId;
    tree.setItems(body.items);
  }

  $("tree-filter").addEventListener("change", (event) => {
    tree.filter = event.target.value;
    tree.rebuild();
  });
  $("tree-search").addEventListener("input", (event) => {
    tree.search = event.target.value;
    tree.rebuild();
  });
  document.addEventListener("keydown", (event) => {
    const typing = /^(INPUT|TEXTAREA|SELECT)$/.test(document.activeElement.tagName);
    if (event.key === "/" && !typing) {
      event.preventDefault();
      $("tree-search").focus();
    }
  });

  // -- selection: branch and context ----------------------------------------------------------------------

  let selectToken = 0;
  async function select(id, { fromTree = false } = {}) {
    state.selectedId = id;
    if (!fromTree) tree.select(id);
    else tree.selectedId = id;
    history.replaceState(null, "", `#entry=${encodeURIComponent(id)}`);
    const token = ++selectToken;
    $("selected-info").textContent = id;
    state.branchLimit = state.full ? BRANCH_STEP : 40;
    updateActions();
    // The branch first: projecting the context of a long uncompacted path is slow, and the first
    // screen should not wait for it. Callers that need the context wait for state.contextLoaded.
    await renderBranch(id, token).catch((e) => showError(e.message));
    state.contextLoaded = loadContext(id, token).catch((e) => showError(e.message));
  }

  async function renderBranch(id, token) {
    // One request for the newest part of the path, read segment by segment on the server.
    const { body } = await Pi.api("GET", `${base}/path/${Pi.query({ leaf: id, limit: state.branchLimit })}`);
    if (token !== selectToken) return;
    const path = body.entries;
    for (const record of path) if (!state.entries.has(record.id)) state.entries.set(record.id, record);
    Pi.clear(branchBox);
    if (body.hasMore) {
      const more = el("button", { type: "button", class: "link", text: "show older entries" });
      more.addEventListener("click", () => {
        state.branchLimit = Math.min(2000, state.branchLimit + BRANCH_STEP);
        renderBranch(id, selectToken).then(() => (branchBox.scrollTop = 0));
      });
      branchBox.appendChild(el("p", { class: "muted small older" }, `Older entries on this path are not shown (the newest ${path.length} are). `, more));
    }
    for (const record of path) {
      const node = Pi.renderEntry(record);
      node.dataset.id = record.id;
      node.classList.add("branch-item");
      if (record.id === id) node.classList.add("selected");
      const info = state.nodes.get(record.id);
      if (info && info.label) node.prepend(el("span", { class: "badge label", text: info.label }));
      if (info && info.omitted) node.classList.add("omitted");
      node.addEventListener("click", (event) => {
        if (event.target.closest("summary, a")) return;
        if (state.selectedId !== record.id) select(record.id);
      });
      branchBox.appendChild(node);
    }
    if (!path.length) branchBox.appendChild(el("p", { class: "empty", text: "This session has no entries yet." }));
    streaming.card = null;
    branchBox.scrollTop = branchBox.scrollHeight;
  }

  async function loadContext(id, token) {
    $("context-tokens").textContent = "projecting…";
    const params = { leaf: id, window: state.window, head: 20, tail: CONTEXT_DRAWN - 20, llm: false };
    const { body } = await Pi.api("GET", `${base}/context/${Pi.query(params)}`);
    if (token !== selectToken) return;
    const tokens = body.estimate.tokens;
    const fraction = tokens / state.window;
    $("context-tokens").textContent = `≈ ${tokens.toLocaleString()} tokens`;
    $("context-leaf").textContent = `${body.messageCount} messages`;
    const fill = $("context-gauge-fill");
    fill.style.width = `${Math.min(100, fraction * 100).toFixed(1)}%`;
    $("context-gauge").dataset.level = fraction > 1 ? "over" : fraction > 0.8 ? "high" : "ok";
    $("context-gauge").title = `${(fraction * 100).toFixed(1)}% of ${state.window.toLocaleString()} tokens`;
    Pi.clear(contextBox);
    if (body.model) contextBox.appendChild(el("p", { class: "muted small", text: `Model ${body.model.provider}/${body.model.modelId} · thinking ${body.thinkingLevel}` }));
    body.messages.forEach((item, index) => {
      if (body.skippedMessages && index === body.skippedAfter) {
        contextBox.appendChild(el("p", { class: "muted small", text: `… ${body.skippedMessages.toLocaleString()} more messages, counted but not drawn …` }));
      }
      const node = Pi.renderContextMessage(item);
      node.classList.add("context-item");
      node.dataset.id = item.entryId;
      node.addEventListener("click", (event) => {
        if (!event.target.closest("summary, a") && item.entryId) select(item.entryId);
      });
      contextBox.appendChild(node);
    });
    if (!body.messages.length) contextBox.appendChild(el("p", { class: "empty", text: "The model would see nothing yet." }));
  }

  $("context-window").value = String(state.window);
  if ($("context-window").value !== String(state.window)) {
    $("context-window").appendChild(el("option", { value: state.window, text: state.window.toLocaleString() }));
    $("context-window").value = String(state.window);
  }
  $("context-window").addEventListener("change", (event) => {
    state.window = Number(event.target.value);
    if (state.selectedId) loadContext(state.selectedId, selectToken).catch((e) => showError(e.message));
  });

  // -- actions ------------------------------------------------------------------------------------------

  function selectedRecord() {
    return state.entries.get(state.selectedId);
  }

  function isUserMessage(record) {
    return record && record.type === "message" && record.entry.message && record.entry.message.role === "user";
  }

  function updateActions() {
    const none = !state.selectedId;
    document.querySelectorAll("#node-actions button").forEach((button) => {
      const needsEdit = ["navigate", "label", "compact"].includes(button.dataset.action);
      button.disabled =
        (none && button.dataset.action !== "compact") ||
        (needsEdit && !cfg.canEdit) ||
        document.body.dataset.revoked === "true";
    });
  }

  function ask(dialogId, prepare) {
    const dialog = $(dialogId);
    const form = dialog.querySelector("form");
    form.reset();
    if (prepare) prepare(form);
    dialog.showModal();
    return new Promise((resolve) => {
      dialog.addEventListener("close", () => resolve(dialog.returnValue === "ok" ? form : null), { once: true });
    });
  }

  function setEditor(text) {
    if (typeof text === "string") {
      composer.value = text;
      composer.focus();
    }
  }

  async function openNavigate() {
    if (!cfg.canEdit || !state.selectedId) return;
    const form = await ask("navigate-dialog");
    if (!form) return;
    const summarize = form.elements.summarize.checked;
    const body = { targetId: state.selectedId, summarize, replaceInstructions: form.elements.replace.checked };
    if (form.elements.instructions.value.trim()) body.customInstructions = form.elements.instructions.value;
    try {
      const answer = await Pi.api("POST", `${base}/navigate/`, body);
      if (answer.status === 202) {
        await trackOperation(answer.body.operationId, "Summarizing the branch you left…");
        return;
      }
      setEditor(answer.body.editorText);
      await catchUp({ follow: true });
    } catch (error) {
      showError(error.message);
    }
  }

  async function trackOperation(operationId, text) {
    showOperation(text);
    try {
      for (;;) {
        const { body } = await Pi.api("GET", `/api/operations/${operationId}/`);
        if (body.status === "succeeded") {
          if (body.result) setEditor(body.result.editorText);
          await catchUp({ follow: true });
          return body;
        }
        if (body.status === "failed" || body.status === "cancelled") {
          showError(body.error || `The operation was ${body.status}.`);
          return body;
        }
        await new Promise((resolve) => setTimeout(resolve, 700));
      }
    } finally {
      showOperation("");
    }
  }

  async function fork() {
    const record = selectedRecord();
    const user = isUserMessage(record);
    const form = await ask("fork-dialog", (f) => {
      $("fork-position").hidden = !user;
    });
    if (!form) return;
    const body = { entryId: state.selectedId, mode: form.elements.mode.value };
    if (user) body.position = form.elements.before.checked ? "before" : "at";
    try {
      const { body: answer } = await Pi.api("POST", `${base}/fork/`, body);
      if (answer.editorText) sessionStorage.setItem(`piweb-editor-${answer.session.id}`, answer.editorText);
      location.href = `/sessions/${answer.session.id}/`;
    } catch (error) {
      showError(error.message);
    }
  }

  async function clone() {
    try {
      const { body } = await Pi.api("POST", `${base}/clone/`, { entryId: state.selectedId });
      location.href = `/sessions/${body.session.id}/`;
    } catch (error) {
      showError(error.message);
    }
  }

  async function label() {
    const current = (state.nodes.get(state.selectedId) || {}).label || "";
    const form = await ask("label-dialog", (f) => {
      f.elements.label.value = current;
    });
    if (!form) return;
    const value = form.elements.label.value.trim();
    try {
      await Pi.api("POST", `${base}/labels/`, { targetId: state.selectedId, label: value || null });
      await catchUp({ follow: false });
    } catch (error) {
      showError(error.message);
    }
  }

  async function compact() {
    const form = await ask("compact-dialog");
    if (!form) return;
    const body = {};
    if (form.elements.instructions.value.trim()) body.customInstructions = form.elements.instructions.value;
    try {
      const answer = await Pi.api("POST", `${base}/compact/`, body);
      await trackOperation(answer.body.operationId, "Compacting…");
    } catch (error) {
      showError(error.status === 404 ? "Compaction is not available on this server." : error.message);
    }
  }

  const ACTIONS = { navigate: openNavigate, fork, clone, label, compact };
  document.querySelectorAll("#node-actions button").forEach((button) => {
    button.addEventListener("click", () => ACTIONS[button.dataset.action]());
  });

  // The composer needs agent runs on the server; until then it only holds text handed back by actions.
  const send = $("composer-send");
  if (!cfg.canEdit) {
    send.disabled = true;
    composer.disabled = true;
    $("composer-note").textContent = "You can read this session but not add to it.";
  } else if (!cfg.runsUrl) {
    send.disabled = true;
    $("composer-note").textContent = "Sending prompts needs agent runs, which this server does not offer yet.";
  }
  $("composer").addEventListener("submit", async (event) => {
    event.preventDefault();
    const text = composer.value.trim();
    if (!text || !cfg.runsUrl) return;
    send.disabled = true;
    try {
      // A run continues from the session's leaf; "Continue here" on a node moves the leaf first.
      await Pi.api("POST", cfg.runsUrl, { prompt: text });
      composer.value = "";
    } catch (error) {
      showError(error.message);
    } finally {
      send.disabled = false;
    }
  });

  // -- live ---------------------------------------------------------------------------------------------

  let catching = null;
  let again = false;
  let followNext = false;
  // Fetch whatever the page is missing; calls while one runs coalesce into one more pass, and a
  // request to follow the leaf is kept for that pass.
  async function catchUp({ follow }) {
    followNext = followNext || follow;
    if (catching) {
      again = true;
      return catching;
    }
    catching = (async () => {
      do {
        again = false;
        const following = followNext || state.selectedId === state.leafId;
        followNext = false;
        if (state.full) await loadEntriesSince();
        else {
          const { body } = await Pi.api("GET", `${base}/`);
          if (body.lastSeq !== null) state.lastSeq = body.lastSeq;
        }
        await loadTree();
        if (following && state.leafId) await select(state.leafId);
        else if (state.selectedId) await select(state.selectedId);
      } while (again);
    })();
    try {
      await catching;
    } catch (error) {
      showError(error.message);
    } finally {
      catching = null;
    }
  }

  const streaming = { card: null, text: null };
  function streamDelta(delta) {
    if (!streaming.card || !streaming.card.isConnected) {
      streaming.text = document.createTextNode("");
      streaming.card = el("article", { class: "msg msg-assistant streaming" }, el("header", {}, el("span", { class: "who", text: "Assistant" }), el("span", { class: "meta", text: "writing…" })), el("div", { class: "stream-text" }, streaming.text));
      branchBox.appendChild(streaming.card);
    }
    // Append only the new piece: the message is never re-sent or re-rendered while it streams.
    streaming.text.appendData(String(delta));
    branchBox.scrollTop = branchBox.scrollHeight;
  }

  function endStream() {
    if (streaming.card) streaming.card.remove();
    streaming.card = null;
  }

  const STATUS_TEXT = { connecting: "connecting…", live: "live", offline: "reconnecting…", denied: "no live access" };
  new Pi.LiveSession({
    session: cfg.session,
    currentSeq: () => state.lastSeq,
    onStatus: (status) => {
      const badge = $("live-status");
      badge.dataset.state = status;
      badge.textContent = STATUS_TEXT[status] || status;
      if (status === "denied") {
        // Access was taken away (share revoked, link revoked or expired): stop offering anything.
        document.body.dataset.revoked = "true";
        document.querySelectorAll("#node-actions button, #composer button, #composer textarea").forEach((n) => {
          n.disabled = true;
        });
        const banner = $("error-banner");
        banner.textContent = "Your access to this session was revoked.";
        banner.hidden = false;
      }
    },
    onState: (message) => {
      if ((message.seq !== null && message.seq > state.lastSeq) || message.leafId !== state.leafId) {
        catchUp({ follow: false });
      }
    },
    onEvent: (message) => {
      switch (message.event) {
        case "run_delta":
          // Thinking and tool-call argument deltas are not shown while streaming; the saved entry has them.
          if (!message.kind || message.kind === "text") streamDelta(message.delta || "");
          return;
        case "run_ended":
          endStream();
          break;
        case "branch_summary_start":
          showOperation("Summarizing a branch…");
          return;
        case "compaction_start":
          showOperation("Compacting…");
          return;
        case "branch_summary_end":
        case "compaction_end":
          showOperation("");
          if (message.status === "failed" && message.errorMessage) showError(message.errorMessage);
          break;
        default:
          break;
      }
      // A sequence past ours means entries we have not seen: fetch them (this also fills any gap left by
      // an event that never arrived).
      if ((typeof message.seq === "number" && message.seq > state.lastSeq) || message.event === "leaf_moved") {
        endStream();
        catchUp({ follow: false });
      }
    },
  });

  // -- start --------------------------------------------------------------------------------------------

  async function start() {
    const handedBack = sessionStorage.getItem(`piweb-editor-${cfg.session}`);
    if (handedBack !== null) {
      sessionStorage.removeItem(`piweb-editor-${cfg.session}`);
      setEditor(handedBack);
    }
    const hash = new URLSearchParams(location.hash.slice(1)).get("entry");
    await loadTree();
    const first = hash || state.leafId;
    const entriesLoaded = state.full ? loadEntriesSince() : Promise.resolve();
    if (!state.full) {
      const { body } = await Pi.api("GET", `${base}/`);
      if (body.lastSeq !== null) state.lastSeq = body.lastSeq;
    }
    await entriesLoaded;
    tree.rebuild();
    if (first) await select(first);
    else updateActions();
    document.body.dataset.ready = "true";
  }

  start().catch((error) => showError(error.message));
})(window.Pi);
