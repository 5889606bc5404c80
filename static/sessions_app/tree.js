// @ts-check
// The tree panel: Pi's tree as a virtualized flat list in the order the API gives (pre-order). Branches
// are drawn as lanes with connectors (│ ├─) like `git log --graph`: a branch point's last child keeps its
// lane and the others step one lane in, and at most MAX_LANES columns are drawn, so nesting never pushes
// the text out of the panel. Only the rows in view exist in the DOM. The scroller is the ARIA tree; the
// selected row is its active descendant.
import { el } from "./api.js";
import { CONTEXT_EDIT_HELP, clip, isOffline, kindOf, placeholder, preview } from "./format.js";
import { markPieces } from "./search_terms.js";
import { GLYPH, LANE_CLASS, MAX_LANES, OVERSCAN, ROW, drawLanes, firstOf, keyOf, rowVisible } from "./tree_layout.js";

export class TreeView {
  constructor({ scroller, onSelect, onActivate, onExpandRun, recordFor, wantRecords }) {
    this.scroller = scroller;
    this.onSelect = onSelect;
    this.onActivate = onActivate;
    this.onExpandRun = onExpandRun;
    this.recordFor = recordFor; // id → cached entry record or undefined
    this.wantRecords = wantRecords; // ids in view without a cached record
    this.items = [];
    this.rows = [];
    this.hitIds = new Set(); // search hits known so far (the server lists them), marked in place
    this.secretIds = new Set(); // entries holding a secret not redacted yet (shown to the owner only)
    this.terms = []; // the words the search looks for, marked inside hit rows
    this.reveal = null; // the search hit being shown: drawn whatever the filter
    this.folded = new Set();
    this.expandedRuns = new Set();
    this.filter = "default";
    this.filters = new Map(); // filters other modules add: name → (node) => drawn
    this.decorators = []; // (row) => a badge element or null, drawn after the built-in badges
    this.selectedId = null;
    this.autoExpand = 8;
    this.kids = new Map();
    this.itemAt = new Map();
    scroller.setAttribute("role", "tree");
    scroller.setAttribute("aria-label", "Session tree");
    scroller.tabIndex = 0;
    this.spacer = el("div", { class: "tree-spacer", role: "none" });
    this.viewport = el("div", { class: "tree-rows", role: "none" });
    scroller.appendChild(this.spacer);
    scroller.appendChild(this.viewport);
    scroller.addEventListener("scroll", () => this.schedule());
    scroller.addEventListener("keydown", (event) => this.key(event));
    window.addEventListener("resize", () => this.schedule());
  }

  setItems(items) {
    this.items = items;
    // Children by parent id (entry ids; a run answers for its first and last entry), for folding,
    // the sibling switcher and finding a branch's tip.
    this.kids = new Map();
    this.itemAt = new Map();
    for (const item of items) {
      this.itemAt.set(firstOf(item), item);
      if (item.kind === "run") this.itemAt.set(item.lastId, item);
      if (item.parentId == null) continue;
      if (!this.kids.has(item.parentId)) this.kids.set(item.parentId, []);
      this.kids.get(item.parentId).push(item);
    }
    this.rebuild();
  }

  // Display rows: expand runs (short or opened ones; all cached ones while filtering), drop folded
  // subtrees, draw lanes on what is left, then apply the filter. Filters hide rows; they never leave
  // placeholders.
  rebuild() {
    const narrowing = this.filter !== "default" && this.filter !== "all";
    const full = [];
    const hidden = new Set(); // keys of folded or hidden ancestors
    for (const item of this.items) {
      if (item.parentId != null && hidden.has(item.parentId)) {
        hidden.add(keyOf(item));
        continue;
      }
      if (item.kind === "run") {
        const expanded = this.expandRun(item, narrowing);
        if (expanded) full.push(...expanded);
        else if (!narrowing) full.push(item);
        else hidden.add(keyOf(item)); // its entries are not loaded, so it cannot be filtered: skip it
        continue;
      }
      full.push(item);
      if (this.folded.has(item.id)) hidden.add(item.id);
    }
    drawLanes(full);
    const rows = [];
    for (const row of full) {
      if (row.kind === "run" ? narrowing : !this.visible(row)) continue;
      rows.push(row);
    }
    this.rows = rows;
    this.spacer.style.height = `${rows.length * ROW}px`;
    this.render();
  }

  expandRun(run, force) {
    if (!force && run.length > this.autoExpand && !this.expandedRuns.has(run.firstId)) return null;
    const nodes = [];
    let id = run.lastId;
    for (let i = 0; i < run.length; i += 1) {
      const record = this.recordFor(id);
      if (!record) return null;
      nodes.push({
        kind: "node",
        id,
        parentId: record.parentId,
        type: record.type,
        role: record.entry && record.entry.message ? record.entry.message.role : undefined,
        depth: run.depthFrom + run.length - 1 - i,
        segment: run.segment,
        onPath: run.onPath,
        inRun: true,
      });
      if (id === run.firstId) break;
      id = record.parentId;
    }
    return nodes.reverse();
  }

  visible(node) {
    const added = this.filters.get(this.filter);
    if (added) return Boolean(node.current || node.id === this.reveal || added(node));
    return rowVisible(node, this.filter, this.recordFor(node.id), this.reveal);
  }

  // Whether the entry is drawn as a row of its own (not folded away, not inside a closed run).
  hasRow(id) {
    return this.rows.some((r) => r.kind === "node" && r.id === id);
  }

  // Open every folded branch point above an entry, so it is drawn; rebuilds when anything opened.
  unfoldTo(id) {
    let item = this.itemAt.get(id);
    let opened = false;
    for (let guard = 0; item && item.parentId != null && guard < 1000000; guard += 1) {
      if (this.folded.delete(item.parentId)) opened = true;
      item = this.itemAt.get(item.parentId);
    }
    if (opened) this.rebuild();
    return opened;
  }

  schedule() {
    if (this.pending) return;
    this.pending = requestAnimationFrame(() => {
      this.pending = null;
      this.render();
    });
  }

  render() {
    const top = this.scroller.scrollTop;
    const height = this.scroller.clientHeight || 600;
    const first = Math.max(0, Math.floor(top / ROW) - OVERSCAN);
    const last = Math.min(this.rows.length, Math.ceil((top + height) / ROW) + OVERSCAN);
    const fragment = document.createDocumentFragment();
    const missing = [];
    let active = null;
    for (let i = first; i < last; i += 1) {
      const row = this.rows[i];
      if (row.kind === "node" && !this.recordFor(row.id)) missing.push(row.id);
      const node = this.drawRow(row, i);
      if (row.kind === "node" && row.id === this.selectedId) active = node.id;
      fragment.appendChild(node);
    }
    this.viewport.replaceChildren(fragment);
    if (active) this.scroller.setAttribute("aria-activedescendant", active);
    else this.scroller.removeAttribute("aria-activedescendant");
    if (missing.length) this.wantRecords(missing);
  }

  lanes(row) {
    const cells = row.lanes || "";
    const deep = (row.level || 0) > MAX_LANES;
    const shown = deep ? cells.slice(cells.length - MAX_LANES) : cells;
    const box = el("span", { class: "lanes", "aria-hidden": "true" });
    if (deep) box.appendChild(el("span", { class: "more", text: `+${row.level - MAX_LANES}`, title: `${row.level} branches deep` }));
    for (const cell of shown) box.appendChild(el("span", { class: LANE_CLASS[cell] || "" }));
    return box;
  }

  drawRow(row, index) {
    const top = `${index * ROW}px`;
    const level = (row.level || 0) + 1;
    if (row.kind === "run") {
      const node = el(
        "div",
        {
          class: `tree-row run${row.onPath ? " on-path" : ""}`,
          role: "treeitem",
          id: `tree-row-${index}`,
          "aria-level": level,
          "aria-expanded": "false",
          // The name holds the visible words (axe: label-content-name-mismatch); the glyphs are decoration.
          "aria-label": `${row.length.toLocaleString()} entries — open (folded)`,
          dataset: { run: row.firstId },
        },
        el("span", { class: "toggle", text: "▸", "aria-hidden": "true" }),
        this.lanes(row),
        el("span", { class: "glyph", text: "⋮", "aria-hidden": "true" }),
        el("span", { class: "text", text: `${row.length.toLocaleString()} entries — open` }),
      );
      node.style.top = top;
      node.addEventListener("click", () => this.openRun(row));
      return node;
    }
    const kind = kindOf(row.type, row.role);
    const record = this.recordFor(row.id);
    const classes = ["tree-row", `k-${kind}`];
    if (row.onPath) classes.push("on-path");
    if (row.current) classes.push("current");
    if (row.id === this.selectedId) classes.push("selected");
    if (row.omitted) classes.push("omitted");
    if (this.hitIds.has(row.id)) classes.push("hit");
    const branching = (row.children || 0) > 1;
    if (branching) classes.push("branch-point");
    const toggle = el("span", { class: "toggle" });
    if (branching) {
      toggle.textContent = this.folded.has(row.id) ? "▸" : "▾";
      toggle.title = this.folded.has(row.id) ? "Show the branches" : "Fold the branches";
      toggle.addEventListener("pointerdown", (event) => event.stopPropagation());
      toggle.addEventListener("click", (event) => {
        event.stopPropagation();
        this.toggleFold(row.id);
      });
    }
    const text = (record && clip(preview(record, this.recordFor), 140)) || placeholder(row, Boolean(record));
    const node = el(
      "div",
      {
        class: classes.join(" "),
        role: "treeitem",
        id: `tree-row-${index}`,
        "aria-level": level,
        "aria-expanded": branching ? String(!this.folded.has(row.id)) : null,
        "aria-selected": row.id === this.selectedId ? "true" : "false",
        "aria-current": row.current ? "true" : null,
        dataset: { id: row.id, type: row.type, role: row.role || "" },
        title: row.type === "context_edit" ? CONTEXT_EDIT_HELP : row.id,
      },
      toggle,
      this.lanes(row),
      el("span", { class: "glyph", text: GLYPH[kind] || "·", "aria-hidden": "true" }),
      row.label ? el("span", { class: "badge label", text: row.label }) : null,
      row.type === "branch_summary" ? el("span", { class: "badge summary", text: "summary" }) : null,
      row.type === "compaction" ? el("span", { class: "badge compaction", text: "compaction" }) : null,
      record && record.entry && isOffline(record.entry.details) ? el("span", { class: "badge offline", text: "offline" }) : null,
      row.omitted ? el("span", { class: "badge omitted", text: "left out", title: "A retry left this entry out of the model's context; it stays in the history." }) : null,
      row.edited ? el("span", { class: "badge edited", text: "edited" }) : null,
      this.secretIds.has(row.id) ? el("span", { class: "badge secret", text: "secret", title: "A secret was found in this entry: redact it from Secrets…" }) : null,
      ...this.decorators.map((decorate) => decorate(row)),
      this.rowText(text, this.hitIds.has(row.id)),
      branching ? el("span", { class: "badge branches", text: `${row.children} branches` }) : null,
      row.current ? el("span", { class: "badge current", text: "leaf" }) : null,
    );
    node.style.top = top;
    // Select on press: rows are redrawn when entries arrive, and a click whose press and release
    // land on two different drawings of a row would be lost. Clicks (keyboardless assistive
    // technology) select too.
    const choose = (event) => {
      if (event.button > 0) return;
      this.scroller.focus({ preventScroll: true });
      if (this.selectedId !== row.id) this.select(row.id, { notify: true });
    };
    node.addEventListener("pointerdown", choose);
    node.addEventListener("click", choose);
    node.addEventListener("dblclick", () => this.onActivate(row.id));
    return node;
  }

  // A row's text; in a search hit, the query's words are marked.
  rowText(text, hit) {
    if (!hit || !this.terms.length) return el("span", { class: "text", text });
    const pieces = markPieces(text, this.terms).map(([piece, match]) => (match ? el("mark", { text: piece }) : piece));
    return el("span", { class: "text" }, ...pieces);
  }

  openRun(run) {
    this.expandedRuns.add(run.firstId);
    if (this.expandRun(run, false)) this.rebuild();
    else this.onExpandRun(run);
  }

  toggleFold(id) {
    if (this.folded.has(id)) this.folded.delete(id);
    else this.folded.add(id);
    this.rebuild();
  }

  select(id, { notify = false, scroll = true } = {}) {
    this.selectedId = id;
    const index = this.rows.findIndex((r) => r.kind === "node" && r.id === id);
    if (index >= 0 && scroll) this.scrollToIndex(index);
    this.render();
    if (notify) this.onSelect(id);
  }

  scrollToIndex(index) {
    const top = index * ROW;
    const view = this.scroller.clientHeight || 600;
    if (top < this.scroller.scrollTop) this.scroller.scrollTop = top;
    else if (top + ROW > this.scroller.scrollTop + view) this.scroller.scrollTop = Math.max(0, top - view / 2);
  }

  // Siblings of an entry (its parent's children, in tree order) for the ‹ 1/2 › switcher.
  siblingsOf(id) {
    const item = this.itemAt.get(id);
    if (!item || firstOf(item) !== id || item.parentId == null) return null;
    const kids = this.kids.get(item.parentId) || [];
    if (kids.length < 2) return null;
    return { ids: kids.map(firstOf), index: kids.indexOf(item) };
  }

  // The newest tip below an entry: follow the current path where it goes, else the last child.
  tipOf(id) {
    let item = this.itemAt.get(id);
    for (let guard = 0; item && guard < 100000; guard += 1) {
      const kids = this.kids.get(keyOf(item)) || [];
      if (!kids.length) return keyOf(item);
      item = kids.find((k) => k.onPath) || kids[kids.length - 1];
    }
    return id;
  }

  key(event) {
    if (event.target !== this.scroller) return;
    const nodes = this.rows;
    let index = nodes.findIndex((r) => r.kind === "node" && r.id === this.selectedId);
    const move = (step) => {
      let i = index;
      do i += step;
      while (i >= 0 && i < nodes.length && nodes[i].kind !== "node");
      if (i >= 0 && i < nodes.length) this.select(nodes[i].id, { notify: true });
    };
    const row = index >= 0 ? nodes[index] : null;
    switch (event.key) {
      case "ArrowDown":
        move(1);
        break;
      case "ArrowUp":
        move(-1);
        break;
      case "Home":
        index = -1;
        move(1);
        break;
      case "End":
        index = nodes.length;
        move(-1);
        break;
      case "ArrowLeft":
        if (row && row.children > 1 && !this.folded.has(row.id)) this.toggleFold(row.id);
        else if (row && row.parentId) this.select(row.parentId, { notify: true });
        break;
      case "ArrowRight":
        if (row && row.children > 1 && this.folded.has(row.id)) this.toggleFold(row.id);
        else if (index >= 0 && nodes[index + 1] && nodes[index + 1].kind === "run") this.openRun(nodes[index + 1]);
        else move(1);
        break;
      case "Enter":
        if (row) this.onActivate(row.id);
        break;
      default:
        return;
    }
    event.preventDefault();
  }
}
