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
  // The branch panel draws the newest part of the path first (a screenful and some: a click answers at
  // once); older entries come a page at a time as it is scrolled towards the top.
  const BRANCH_FIRST = 12;
  const BRANCH_STEP = 60;
  const NEAR = 200; // px from the panel's edge at which the next page of a long path or context is fetched
  // The context panel draws the first messages (the prompt, a summary) and the newest ones; the ones between
  // come a page at a time as the gap scrolls into view. All are counted in the estimate.
  const CONTEXT_HEAD = 10;
  const CONTEXT_TAIL = 40;
  const CONTEXT_STEP = 60;
  const CONTEXT_RENDERED = 20; // of the tail, the newest rendered (markdown, highlighting); older ones plain
  const CONTEXT_PAUSE = 120; // ms a selection is kept before its context is projected

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
  };

  const $ = (id) => document.getElementById(id);
  const branchBox = $("branch");
  const contextBox = $("context");
  const composer = $("composer-text");

  function showError(message) {
    const banner = $("error-banner");
    Pi.clear(banner);
    banner.hidden = !message;
    if (!message) return;
    banner.append(el("span", { text: message }), el("button", { type: "button", class: "link close", text: "Dismiss", onclick: () => (banner.hidden = true) }));
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

  // A selection's branch goes first: requests for tree rows would hold up its request. A click draws the
  // tree before it selects, so look again after this turn and after each wait.
  async function branchFirst() {
    let current = null;
    while (current !== state.branchDrawn) {
      await null;
      current = state.branchDrawn;
      await current;
    }
  }

  // Rows in view whose entries are not loaded yet are fetched in one request per batch. Until the first
  // screen is drawn they only queue: the branch request brings most of them (the path around the leaf).
  const RECORDS_BATCH = 100; // the most ids the entries endpoint takes at once
  let wanted = new Set();
  const unavailable = new Set(); // asked for and not returned: never asked again
  let fetching = false;
  async function wantRecords(ids) {
    if (state.full) return;
    ids.forEach((id) => state.entries.has(id) || unavailable.has(id) || wanted.add(id));
    if (fetching || !state.ready) return;
    fetching = true;
    try {
      while (wanted.size) {
        await branchFirst();
        const batch = [...wanted].filter((id) => !state.entries.has(id)).slice(0, RECORDS_BATCH);
        wanted = new Set([...wanted].filter((id) => !batch.includes(id) && !state.entries.has(id)));
        if (!batch.length) break;
        const query = new URLSearchParams(batch.map((id) => ["id", id]));
        try {
          const { body } = await Pi.api("GET", `${base}/entries/?${query}`);
          for (const record of body.entries) if (!state.entries.has(record.id)) state.entries.set(record.id, record);
          batch.forEach((id) => state.entries.has(id) || unavailable.add(id));
        } catch (error) {
          break; // the rows keep their placeholders; the next render asks again
        }
        tree.render();
      }
    } finally {
      fetching = false;
    }
  }

  // -- tree ---------------------------------------------------------------------------------------------

  const tree = new Pi.TreeView({
    scroller: $("tree-scroll"),
    onSelect: (id) => select(id, { fromTree: true, show: true }),
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
  // -- search: every hit of the session, listed by the server in tree order, a page at a time ------------
  // Typing asks for the first page (the count and the hits marked in place); Enter / ↓ go to the next
  // hit, Shift+Enter / ↑ to the previous, loading further pages as the steps reach them. Each hit is
  // opened in the tree: folded branches above it open, and a hit inside a folded run or far from what
  // is drawn loads the tree around it.
  const HIT_PAGE = 200;
  const hits = { query: "", total: 0, ids: [], pages: new Set(), at: -1, incomplete: false, ready: false, loaded: null };
  let searchTimer = null;
  let stepping = Promise.resolve();

  function showHitCount() {
    let text = "";
    if (hits.query && !hits.ready) text = "…";
    else if (hits.query && !hits.total) text = hits.incomplete ? "too many candidates: try other words" : "no match";
    else if (hits.query) text = `${hits.at >= 0 ? (hits.at + 1).toLocaleString() : "–"} of ${hits.total.toLocaleString()}`;
    $("search-hits").textContent = text;
    $("search-prev").disabled = $("search-next").disabled = !hits.total;
  }

  async function loadHitPage(query, page) {
    const params = { q: query, offset: page * HIT_PAGE, limit: HIT_PAGE };
    const { body } = await Pi.api("GET", `${base}/search/${Pi.query(params)}`);
    if (query !== hits.query) return;
    hits.total = body.total;
    hits.incomplete = body.incomplete;
    hits.ready = true;
    for (const hit of body.hits) {
      hits.ids[hit.index] = hit.entryId;
      tree.hitIds.add(hit.entryId);
    }
    hits.pages.add(page);
    tree.render();
  }

  // Start (or, with keep, refresh after the session changed) the list for a query.
  function startSearch(query, { keep = false } = {}) {
    const at = keep && query === hits.query ? hits.at : -1;
    Object.assign(hits, { query, total: 0, ids: [], pages: new Set(), at, incomplete: false, ready: false, loaded: null });
    tree.hitIds = new Set();
    tree.render();
    if (query) {
      const loaded = loadHitPage(query, 0).then(() => {
        if (hits.query !== query) return;
        hits.at = Math.min(hits.at, hits.total - 1);
        showHitCount();
      });
      hits.loaded = loaded.catch((error) => showError(error.message));
    }
    showHitCount();
    return hits.loaded || Promise.resolve();
  }

  async function hitAt(index) {
    const page = Math.floor(index / HIT_PAGE);
    if (!hits.pages.has(page)) await loadHitPage(hits.query, page);
    return hits.ids[index];
  }

  async function revealHit(id) {
    tree.reveal = id;
    tree.unfoldTo(id);
    if (!tree.hasRow(id)) {
      state.treeParams = { around: id };
      await loadTree();
      tree.unfoldTo(id);
    }
    await select(id);
  }

  async function stepHit(step) {
    const query = $("tree-search").value.trim();
    if (!query) return;
    clearTimeout(searchTimer);
    if (query !== hits.query || hits.loaded === null) startSearch(query);
    await hits.loaded;
    if (query !== hits.query || !hits.total) return;
    hits.at = (hits.at + step + hits.total) % hits.total;
    showHitCount();
    const id = await hitAt(hits.at);
    if (id) await revealHit(id);
  }

  // Steps run one after another, so a quick series of Enters ends on the hit it counted to.
  function nextHit(step) {
    stepping = stepping.then(() => stepHit(step)).catch((error) => showError(error.message));
  }

  $("tree-search").addEventListener("input", (event) => {
    clearTimeout(searchTimer);
    const query = event.target.value.trim();
    searchTimer = setTimeout(() => query !== hits.query && startSearch(query), 250);
  });
  $("tree-search").addEventListener("keydown", (event) => {
    if (event.key === "Enter") {
      event.preventDefault();
      nextHit(event.shiftKey ? -1 : 1);
    } else if (event.key === "Escape") {
      event.target.value = "";
      clearTimeout(searchTimer);
      tree.reveal = null;
      startSearch("");
      tree.rebuild();
    }
  });
  $("search-next").addEventListener("click", () => nextHit(1));
  $("search-prev").addEventListener("click", () => nextHit(-1));

  // Phone: one panel at a time.
  const phone = window.matchMedia("(max-width: 900px)");
  function showPanel(name) {
    $("panels").dataset.show = name;
    document.querySelectorAll(".panel-tabs button").forEach((b) => b.setAttribute("aria-selected", String(b.dataset.panel === name)));
  }
  document.querySelectorAll(".panel-tabs button").forEach((b) => b.addEventListener("click", () => showPanel(b.dataset.panel)));
  document.addEventListener("keydown", (event) => {
    const typing = /^(INPUT|TEXTAREA|SELECT)$/.test(document.activeElement.tagName);
    if (event.key === "/" && !typing) {
      event.preventDefault();
      $("tree-search").focus();
    }
  });

  // -- selection: branch and context ----------------------------------------------------------------------

  let selectToken = 0;
  async function select(id, { fromTree = false, show = false } = {}) {
    state.selectedId = id;
    if (show && phone.matches) showPanel("branch");
    if (!fromTree) tree.select(id);
    else tree.selectedId = id;
    history.replaceState(null, "", `#entry=${encodeURIComponent(id)}`);
    const token = ++selectToken;
    $("selected-info").textContent = id;
    updateActions();
    // The branch first, then the context: the click answers with the branch, and its small request does
    // not share the server (or this page's main thread) with the projection, slow on a long path.
    // Callers that need the context wait for state.contextLoaded.
    // Moving through the tree (arrow keys, quick clicks) projects only the context it stops at.
    $("context-tokens").textContent = "projecting…";
    const drawn = renderBranch(id, token).catch((e) => showError(e.message));
    state.branchDrawn = drawn;
    const pause = state.ready ? CONTEXT_PAUSE : 0;
    state.contextLoaded = drawn
      .then(() => new Promise((resolve) => setTimeout(resolve, pause)))
      .then(() => (token === selectToken ? loadContext(id, token) : null))
      .catch((e) => showError(e.message));
    await drawn;
  }

  // The part of the selected entry's path that is drawn: ids root first, from depth firstDepth (the
  // path's depths are consecutive). A click on one of its entries draws that entry's branch at once from
  // it, and the request only confirms it (or brings what was missing).
  let shownPath = { id: null, ids: [], records: new Map(), firstDepth: 0, hasMore: false };
  let olderLoading = null;

  function cachedBranch(id) {
    const at = shownPath.ids.indexOf(id);
    if (at < 0) return null;
    const from = Math.max(0, at + 1 - BRANCH_FIRST);
    return {
      entries: shownPath.ids.slice(from, at + 1).map((x) => shownPath.records.get(x)),
      firstDepth: shownPath.firstDepth + from,
      hasMore: from > 0 || shownPath.hasMore,
    };
  }

  const sameBranch = (a, b) =>
    a.hasMore === b.hasMore && a.entries.length === b.entries.length && a.entries.every((r, i) => r.id === b.entries[i].id);

  async function renderBranch(id, token) {
    const cached = cachedBranch(id);
    if (cached) drawBranch(id, cached);
    // One small request for the newest part of the path, read segment by segment on the server.
    const { body } = await Pi.api("GET", `${base}/path/${Pi.query({ leaf: id, limit: BRANCH_FIRST, render: 1 })}`);
    if (token !== selectToken) return;
    await state.treeLoaded; // the sibling switchers need the tree
    if (token !== selectToken) return;
    for (const record of body.entries) if (!state.entries.has(record.id)) state.entries.set(record.id, record);
    if (!cached || !sameBranch(cached, body)) drawBranch(id, body);
  }

  // The next older page of the drawn path, put above what is shown without moving it.
  function loadOlder() {
    if (!shownPath.hasMore || olderLoading) return olderLoading;
    const { id, firstDepth } = shownPath;
    const token = selectToken;
    branchBox.setAttribute("aria-busy", "true");
    olderLoading = (async () => {
      await null; // a branch drawn at once from the last one gets its context promise after this turn
      await state.contextLoaded; // the context panel of this selection goes first
      if (token !== selectToken) return;
      const query = { leaf: id, beforeDepth: firstDepth, limit: BRANCH_STEP, render: 1 };
      const { body } = await Pi.api("GET", `${base}/path/${Pi.query(query)}`);
      if (token !== selectToken || shownPath.id !== id || shownPath.firstDepth !== firstDepth) return;
      for (const record of body.entries) if (!state.entries.has(record.id)) state.entries.set(record.id, record);
      const height = branchBox.scrollHeight;
      const anchor = branchBox.querySelector(".older") ? branchBox.querySelector(".older").nextSibling : branchBox.firstChild;
      const cards = document.createDocumentFragment();
      for (const record of body.entries) cards.append(...branchCard(record, id));
      branchBox.insertBefore(cards, anchor);
      shownPath.ids = body.entries.map((r) => r.id).concat(shownPath.ids);
      for (const record of body.entries) shownPath.records.set(record.id, record);
      shownPath.firstDepth = body.firstDepth ?? 0;
      shownPath.hasMore = body.hasMore;
      olderNotice();
      branchBox.scrollTop += branchBox.scrollHeight - height;
    })()
      .catch((e) => showError(e.message))
      .finally(() => {
        olderLoading = null;
        branchBox.removeAttribute("aria-busy");
      });
    return olderLoading.then(fillBranch);
  }

  // While the top of the drawn path is in reach (scrolled up, or a path too short to fill the panel),
  // bring the next older page.
  function fillBranch() {
    if (shownPath.hasMore && branchBox.scrollTop < NEAR) loadOlder();
  }
  branchBox.addEventListener("scroll", fillBranch, { passive: true });

  function olderNotice() {
    const old = branchBox.querySelector(":scope > .older");
    if (!shownPath.hasMore) {
      if (old) old.remove();
      return;
    }
    if (old) {
      old.querySelector(".older-count").textContent = `the newest ${shownPath.ids.length.toLocaleString()}`;
      return;
    }
    const more = el("button", { type: "button", class: "link", text: "show older entries" });
    more.addEventListener("click", () => loadOlder());
    branchBox.prepend(el("p", { class: "muted small older" }, "Older entries on this path are not shown (", el("span", { class: "older-count", text: `the newest ${shownPath.ids.length.toLocaleString()}` }), " are; more load as you scroll up). ", more));
  }

  // One entry of the path: its card, and the sibling switcher on a line of its own when it has no header.
  function branchCard(record, selectedId) {
    const node = Pi.renderEntry(record);
    node.dataset.id = record.id;
    node.classList.add("branch-item");
    if (record.id === selectedId) node.classList.add("selected");
    const info = state.nodes.get(record.id);
    if (info && info.label) node.prepend(el("span", { class: "badge label", text: info.label }));
    if (info && info.omitted) node.classList.add("omitted");
    node.addEventListener("click", (event) => {
      if (event.target.closest("summary, a, button, pre, table")) return;
      if (state.selectedId !== record.id) select(record.id);
    });
    const siblings = tree.siblingsOf(record.id);
    // In a card's header; a collapsible card gets it on a line of its own (no control inside a summary).
    const header = node.querySelector(":scope > header");
    if (siblings && header) header.appendChild(siblingSwitcher(siblings));
    else if (siblings) return [el("div", { class: "sibling-line", dataset: { for: record.id } }, siblingSwitcher(siblings)), node];
    return [node];
  }

  function drawBranch(id, body) {
    const path = body.entries;
    shownPath = {
      id,
      ids: path.map((r) => r.id),
      records: new Map(path.map((r) => [r.id, r])),
      firstDepth: body.firstDepth ?? 0,
      hasMore: body.hasMore,
    };
    Pi.clear(branchBox);
    const cards = document.createDocumentFragment();
    for (const record of path) cards.append(...branchCard(record, id));
    branchBox.appendChild(cards);
    olderNotice();
    if (!path.length) branchBox.appendChild(el("p", { class: "empty", text: "This session has no entries yet." }));
    streaming.card = null;
    branchBox.scrollTop = branchBox.scrollHeight;
    fillBranch();
  }

  // ‹ 2/3 › on a message with alternatives: go to the newest tip of the neighbouring branch.
  function siblingSwitcher({ ids, index }) {
    const go = (step) => (event) => {
      event.stopPropagation();
      event.preventDefault();
      const target = ids[(index + step + ids.length) % ids.length];
      select(tree.tipOf(target));
    };
    return el(
      "span",
      { class: "siblings", role: "group", "aria-label": "Alternatives" },
      el("button", { type: "button", class: "sibling-prev", "aria-label": "Previous alternative", text: "‹", onclick: go(-1) }),
      el("span", { class: "sibling-pos", text: `${index + 1}/${ids.length}` }),
      el("button", { type: "button", class: "sibling-next", "aria-label": "Next alternative", text: "›", onclick: go(1) }),
    );
  }

  // The known model (configured in the admin) gives the window; otherwise the server's default.
  function knownModel(model) {
    if (!model) return null;
    return (cfg.models || []).find((m) => m.modelId === model.modelId && (!model.provider || m.provider === model.provider)) || null;
  }

  async function loadContext(id, token) {
    const params = { leaf: id, head: CONTEXT_HEAD, tail: CONTEXT_TAIL, llm: false, render: CONTEXT_RENDERED };
    const { body } = await Pi.api("GET", `${base}/context/${Pi.query(params)}`);
    if (token !== selectToken) return;
    const known = knownModel(body.model);
    state.window = known ? known.contextWindow : cfg.contextWindow;
    // The request's three parts: the system prompt and tool definitions a run sends, then the messages.
    const parts = body.breakdown;
    const tokens = parts.total;
    const fraction = tokens / state.window;
    const pct = (v) => `${Math.min(100, (v / state.window) * 100).toFixed(3)}%`;
    const share = (v) => `${((v / state.window) * 100).toFixed(v && v / state.window < 0.001 ? 2 : 1)}%`;
    $("context-pct").textContent = `${(fraction * 100).toFixed(fraction < 0.1 ? 1 : 0)}%`;
    $("context-tokens").textContent = `≈ ${tokens.toLocaleString()} tokens`;
    $("context-window-text").textContent = `${state.window.toLocaleString()}`;
    $("context-leaf").textContent = `${body.messageCount.toLocaleString()} messages`;
    $("gauge-sys").style.width = pct(parts.systemPrompt);
    $("gauge-tools").style.width = pct(parts.tools);
    $("context-gauge-fill").style.width = pct(parts.messages);
    $("context-gauge").dataset.level = fraction > 1 ? "over" : fraction > 0.8 ? "high" : "ok";
    $("context-gauge").setAttribute("aria-label", `${(fraction * 100).toFixed(1)}% of the context window used`);
    const part = (cls, label, value, title) =>
      el("span", { class: cls, title, dataset: { tokens: String(value) } }, el("i"), `${label} ${value.toLocaleString()} `, el("span", { class: "muted", text: `(${share(value)})` }));
    Pi.clear($("context-breakdown")).append(
      part("sys", "system prompt", parts.systemPrompt, "The system prompt a run sends: the session's system messages replayed into one prompt"),
      part("tools", "tools", parts.tools, "The definitions of the tools in force, sent with every request"),
      part(
        "msgs",
        "messages",
        parts.messages,
        parts.fromUsage ? "The provider's last reported input beyond the prompt and tools, plus estimates of what came after" : "Estimated from the messages' text",
      ),
    );
    const model = body.model && (body.model.provider || body.model.modelId) ? [body.model.provider, body.model.modelId].filter(Boolean).join("/") : null;
    $("context-model").textContent =
      `Model ${model || "not recorded in this session"} · thinking ${body.thinkingLevel || "off"} · window ${Pi.tokens(state.window)} ` +
      (known ? `(${known.name})` : "(server default: this model is not configured here)");
    Pi.clear(contextBox);
    contextGap = null;
    const cards = document.createDocumentFragment();
    body.messages.forEach((item, index) => {
      if (body.skippedMessages && index === body.skippedAfter) {
        contextGap = { id, token, head: body.skippedAfter, next: body.skippedAfter + body.skippedMessages, node: el("p", { class: "muted small context-gap" }) };
        cards.appendChild(contextGap.node);
        contextGapText();
      }
      cards.appendChild(contextCard(item));
    });
    contextBox.appendChild(cards);
    if (!body.messages.length) contextBox.appendChild(el("p", { class: "empty", text: "The model would see nothing yet." }));
  }

  function contextCard(item) {
    const node = Pi.renderContextMessage(item, state.entries.get(item.entryId));
    node.classList.add("context-item");
    node.dataset.id = item.entryId;
    node.addEventListener("click", (event) => {
      if (!event.target.closest("summary, a, button, pre, table") && item.entryId) select(item.entryId);
    });
    return node;
  }

  // The messages between the first ones and those drawn after them: messages [head, next) are not drawn.
  let contextGap = null;
  let gapLoading = null;
  function contextGapText() {
    const missing = (contextGap.next - contextGap.head).toLocaleString();
    const text = contextGap.node.querySelector(".gap-text");
    if (text) {
      text.textContent = `… ${missing} more messages, counted; they load as you scroll here. `;
      return;
    }
    const more = el("button", { type: "button", class: "link", text: "show more" });
    more.addEventListener("click", () => loadContextPage());
    contextGap.node.append(el("span", { class: "gap-text", text: `… ${missing} more messages, counted; they load as you scroll here. ` }), more);
  }

  // The page of messages just before those drawn after the gap, put in without moving what is in view.
  function loadContextPage() {
    const gap = contextGap;
    if (!gap || gapLoading || gap.token !== selectToken) return gapLoading;
    const count = Math.min(CONTEXT_STEP, gap.next - gap.head);
    const params = { leaf: gap.id, head: 0, tail: count, before: gap.next, llm: false, render: count };
    gapLoading = Pi.api("GET", `${base}/context/${Pi.query(params)}`)
      .then(({ body }) => {
        if (gap !== contextGap || gap.token !== selectToken) return;
        const below = contextBox.scrollHeight - contextBox.scrollTop;
        const above = gap.node.getBoundingClientRect().bottom <= contextBox.getBoundingClientRect().top;
        const cards = document.createDocumentFragment();
        body.messages.forEach((item) => cards.appendChild(contextCard(item)));
        gap.node.after(cards);
        gap.next -= body.messages.length;
        if (gap.next <= gap.head || !body.messages.length) {
          gap.node.remove();
          contextGap = null;
        } else contextGapText();
        if (above) contextBox.scrollTop = contextBox.scrollHeight - below;
      })
      .catch((e) => showError(e.message))
      .finally(() => {
        gapLoading = null;
      });
    return gapLoading;
  }
  // A gap scrolled into view (or near it) brings its next page; a gap shown at first waits for a scroll.
  contextBox.addEventListener(
    "scroll",
    () => {
      if (!contextGap) return;
      const box = contextBox.getBoundingClientRect();
      const gap = contextGap.node.getBoundingClientRect();
      if (gap.bottom > box.top - NEAR && gap.top < box.bottom + NEAR) loadContextPage();
    },
    { passive: true },
  );

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

  const ask = Pi.ask;

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
      f.elements.name.value = `${currentName()} (fork)`;
    });
    if (!form) return;
    const body = { entryId: state.selectedId, mode: form.elements.mode.value };
    if (user) body.position = form.elements.before.checked ? "before" : "at";
    try {
      const { body: answer } = await Pi.api("POST", `${base}/fork/`, body);
      await nameCopy(answer.session.id, form.elements.name.value);
      if (answer.editorText) sessionStorage.setItem(`piweb-editor-${answer.session.id}`, answer.editorText);
      location.href = `/sessions/${answer.session.id}/`;
    } catch (error) {
      showError(error.message);
    }
  }

  function currentName() {
    return $("session-title").textContent.trim() || "Session";
  }

  // A fork or clone gets its own name (a session_info entry in the copy), so the two are told apart.
  async function nameCopy(id, name) {
    if (name && name.trim()) await Pi.api("PATCH", `/api/sessions/${id}/`, { name: name.trim() }).catch(() => null);
  }

  async function clone() {
    const form = await ask("clone-dialog", (f) => {
      f.elements.name.value = `${currentName()} (copy)`;
    });
    if (!form) return;
    try {
      const { body } = await Pi.api("POST", `${base}/clone/`, { entryId: state.selectedId });
      await nameCopy(body.session.id, form.elements.name.value);
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
      showError(error.message);
    }
  }

  // Compare: the first press marks the selected entry, the second opens both contexts side by side.
  let compareFrom = null;
  function compare() {
    const button = document.querySelector('#node-actions button[data-action="compare"]');
    if (!compareFrom || compareFrom === state.selectedId) {
      compareFrom = state.selectedId;
      button.textContent = "Compare with marked…";
      showNotice(`Marked ${compareFrom} for comparison: select another entry and press “Compare with marked…”.`);
      return;
    }
    const link = `/sessions/${cfg.session}/compare/${Pi.query({ a: compareFrom, b: state.selectedId })}`;
    compareFrom = null;
    button.textContent = "Compare…";
    location.href = link;
  }

  function showNotice(text) {
    showOperation("");
    const banner = $("operation-banner");
    $("operation-text").textContent = text;
    banner.querySelector(".spinner").hidden = true;
    banner.hidden = false;
    setTimeout(() => {
      if ($("operation-text").textContent === text) banner.hidden = true;
      banner.querySelector(".spinner").hidden = false;
    }, 8000);
  }

  const ACTIONS = { navigate: openNavigate, fork, clone, label, compact, compare };

  if ($("rename-button")) {
    $("rename-button").addEventListener("click", async () => {
      const form = await ask("rename-dialog", (f) => (f.elements.name.value = currentName()));
      if (!form) return;
      try {
        const { body } = await Pi.api("PATCH", `${base}/`, { name: form.elements.name.value.trim() });
        $("session-title").textContent = body.name || currentName();
        document.title = `${$("session-title").textContent} · piweb`;
        await catchUp({ follow: false });
      } catch (error) {
        showError(error.message);
      }
    });
  }
  if ($("delete-button")) {
    $("delete-button").addEventListener("click", async () => {
      const ok = await Pi.confirmAction({
        title: `Delete “${currentName()}”?`,
        text: "The session, its whole tree and its share links are removed for everyone. Export it first if you may need it.",
        confirm: "Delete",
      });
      if (!ok) return;
      try {
        await Pi.api("DELETE", `${base}/`);
        location.href = "/";
      } catch (error) {
        showError(error.message);
      }
    });
  }
  document.querySelectorAll("#node-actions button").forEach((button) => {
    button.addEventListener("click", () => ACTIONS[button.dataset.action]());
  });

  // The composer: disabled with the reason and what to do when it cannot send; Enter sends, Shift+Enter
  // adds a line; the model and thinking level go with the prompt.
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
    composerOff(cfg.readOnly ? "This is a read-only link: sign in and open the session from your list to continue it." : "You can read this session but not add to it. Ask its owner for edit access, or fork it to continue in your own copy.");
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
      await Pi.api("POST", cfg.runsUrl, body);
      composer.value = "";
      $("composer-note").textContent = "";
    } catch (error) {
      $("composer-note").textContent = "";
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
        if (hits.query) startSearch(hits.query, { keep: true }); // new entries may hold new hits
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
      // The first screen loads once; until then the socket's position is what start() reads anyway.
      if (!state.ready) return;
      if ((message.seq !== null && message.seq > state.lastSeq) || message.leafId !== state.leafId) {
        catchUp({ follow: false });
      }
    },
    onEvent: (message) => {
      if (!state.ready) {
        state.missed = true;
        return;
      }
      switch (message.event) {
        case "run_delta":
          // Thinking and tool-call argument deltas are not shown while streaming; the saved entry has them.
          if (!message.kind || message.kind === "text") streamDelta(message.delta || "");
          return;
        case "run_ended":
          endStream();
          // piweb runs no tools: continue_in_pi.js offers to continue this branch in Pi.
          if (message.toolUse) document.dispatchEvent(new CustomEvent("piweb:tool-use", { detail: {} }));
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
    // Tree, branch and context start together: the leaf comes with the page, so nothing waits for the tree.
    const named = new URLSearchParams(location.hash.slice(1)).get("entry");
    const first = named || cfg.leafId;
    state.treeLoaded = loadTree();
    const seqLoaded = state.full
      ? null
      : Pi.api("GET", `${base}/`).then(({ body }) => {
          if (body.lastSeq !== null && body.lastSeq > state.lastSeq) state.lastSeq = body.lastSeq;
        });
    const selected = first ? select(first) : Promise.resolve();
    await state.treeLoaded;
    if (first) tree.select(first);
    if (state.full) {
      await loadEntriesSince();
      tree.rebuild();
    }
    await Promise.all([selected, seqLoaded]);
    if (!first && state.leafId) await select(state.leafId);
    else if (!first) updateActions();
    state.ready = true;
    document.body.dataset.ready = "true";
    tree.render(); // rows drawn before the path arrived now show its entries; the rest are fetched
    if (state.missed) catchUp({ follow: false });
    // Opened from a search (?q=): the search is active, at the hit named in the address or the first.
    const query = (new URLSearchParams(location.search).get("q") || "").trim();
    if (query) openSearch(query, named);
  }

  function openSearch(query, entryId) {
    $("tree-search").value = query;
    stepping = stepping
      .then(async () => {
        await startSearch(query);
        const index = entryId ? hits.ids.indexOf(entryId) : -1;
        if (!entryId) return stepHit(1);
        hits.at = index;
        showHitCount();
        return revealHit(entryId);
      })
      .catch((error) => showError(error.message));
  }

  start().catch((error) => showError(error.message));
})(window.Pi);
