// The tree panel: Pi's /tree as a virtualized flat list. Only the rows in view exist in the DOM, so a
// tree with a hundred thousand rows scrolls like one with ten.
"use strict";

window.Pi = window.Pi || {};

(function (Pi) {
  const el = Pi.el;
  const ROW = 24; // px; every row has the same height so position = index * ROW
  const OVERSCAN = 10;
  const BOOKKEEPING = new Set(["label", "custom", "model_change", "thinking_level_change", "session_info", "usage"]);
  const GLYPH = {
    user: "›",
    assistant: "◆",
    toolResult: "⚙",
    bashExecution: "$",
    branch_summary: "Σ",
    compaction: "▣",
    label: "#",
    context_edit: "✎",
  };

  class TreeView {
    constructor({ scroller, onSelect, onActivate, onExpandRun, recordFor, wantRecords }) {
      this.scroller = scroller;
      this.onSelect = onSelect;
      this.onActivate = onActivate;
      this.onExpandRun = onExpandRun;
      this.recordFor = recordFor; // id → cached entry record or undefined
      this.wantRecords = wantRecords; // ids in view without a cached record
      this.items = [];
      this.rows = [];
      this.folded = new Set();
      this.expandedRuns = new Set();
      this.filter = "default";
      this.search = "";
      this.selectedId = null;
      this.autoExpand = 8;
      this.spacer = el("div", { class: "tree-spacer" });
      this.viewport = el("div", { class: "tree-rows", role: "tree", "aria-label": "Session tree" });
      scroller.appendChild(this.spacer);
      scroller.appendChild(this.viewport);
      scroller.addEventListener("scroll", () => this.schedule());
      scroller.addEventListener("keydown", (event) => this.key(event));
      window.addEventListener("resize", () => this.schedule());
    }

    setItems(items) {
      this.items = items;
      this.segments = segmentInfo(items);
      assignIndent(items);
      this.rebuild();
    }

    // Turn overview items into display rows: expand short (or opened) runs from the entry cache, apply
    // folding, the filter and the search.
    rebuild() {
      const rows = [];
      const query = this.search.trim().toLowerCase();
      let foldedAt = null;
      for (const item of this.items) {
        if (foldedAt && isDescendant(item, foldedAt, this.segments)) continue;
        foldedAt = null;
        if (item.kind === "run") {
          const expanded = this.expandRun(item);
          if (expanded) {
            for (const node of expanded) if (this.visible(node, query)) rows.push(node);
          } else if (!query && this.filter !== "labeled") {
            rows.push(item);
          }
          continue;
        }
        if (this.visible(item, query)) rows.push(item);
        if (item.children && this.folded.has(item.id)) foldedAt = item;
      }
      this.rows = rows;
      this.spacer.style.height = `${rows.length * ROW}px`;
      this.render();
    }

    expandRun(run) {
      if (run.length > this.autoExpand && !this.expandedRuns.has(run.firstId)) return null;
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
          indent: run.indent,
          onPath: run.onPath,
          inRun: true,
        });
        if (id === run.firstId) break;
        id = record.parentId;
      }
      return nodes.reverse();
    }

    visible(node, query) {
      if (node.current && !query) return true; // the leaf stays in view whatever the filter
      const kind = Pi.kindOf(node.type, node.role);
      const record = this.recordFor(node.id);
      switch (this.filter) {
        case "default":
          if (BOOKKEEPING.has(node.type) && !node.current) return false;
          break;
        case "no-tools":
          if (BOOKKEEPING.has(node.type) && !node.current) return false;
          if (kind === "toolResult" || kind === "bashExecution") return false;
          if (kind === "assistant" && record && !Pi.textOf(record.entry.message.content).trim()) return false;
          break;
        case "user":
          if (kind !== "user") return false;
          break;
        case "labeled":
          if (!node.label) return false;
          break;
        default:
          break;
      }
      if (!query) return true;
      const text = `${node.label || ""} ${node.type} ${record ? Pi.preview(record) : ""}`.toLowerCase();
      return text.includes(query);
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
      Pi.clear(this.viewport);
      const missing = [];
      for (let i = first; i < last; i += 1) {
        const row = this.rows[i];
        if (row.kind === "node" && !this.recordFor(row.id)) missing.push(row.id);
        this.viewport.appendChild(this.drawRow(row, i));
      }
      if (missing.length) this.wantRecords(missing);
    }

    drawRow(row, index) {
      const top = `${index * ROW}px`;
      const indent = el("span", { class: "indent" });
      indent.style.width = `${Math.min(row.indent || 0, 40) * 14}px`;
      if (row.kind === "run") {
        const node = el(
          "div",
          { class: `tree-row run${row.onPath ? " on-path" : ""}`, role: "treeitem", dataset: { run: row.firstId } },
          indent,
          el("span", { class: "toggle" }),
          el("span", { class: "glyph", text: "⋮" }),
          el("span", { class: "text muted", text: `${row.length.toLocaleString()} entries` }),
        );
        node.style.top = top;
        node.addEventListener("click", () => this.openRun(row));
        return node;
      }
      const kind = Pi.kindOf(row.type, row.role);
      const record = this.recordFor(row.id);
      const classes = ["tree-row", `k-${kind}`];
      if (row.onPath) classes.push("on-path");
      if (row.current) classes.push("current");
      if (row.id === this.selectedId) classes.push("selected");
      if (row.omitted) classes.push("omitted");
      const toggle = el("span", { class: "toggle" });
      if (row.children) {
        toggle.textContent = this.folded.has(row.id) ? "▸" : "▾";
        toggle.title = `${row.children} branches`;
        toggle.addEventListener("click", (event) => {
          event.stopPropagation();
          this.toggleFold(row.id);
        });
      }
      const text = record ? Pi.clip(Pi.preview(record), 140) : row.type === "message" ? row.role || "message" : row.type;
      const node = el(
        "div",
        {
          class: classes.join(" "),
          role: "treeitem",
          "aria-selected": row.id === this.selectedId ? "true" : "false",
          dataset: { id: row.id, type: row.type, role: row.role || "" },
          title: row.id,
        },
        indent,
        toggle,
        el("span", { class: "glyph", text: GLYPH[kind] || "·" }),
        row.label ? el("span", { class: "badge label", text: row.label }) : null,
        row.type === "branch_summary" ? el("span", { class: "badge summary", text: "summary" }) : null,
        row.type === "compaction" ? el("span", { class: "badge compaction", text: "compaction" }) : null,
        row.omitted ? el("span", { class: "badge omitted", text: "omitted" }) : null,
        row.edited ? el("span", { class: "badge edited", text: "edited" }) : null,
        el("span", { class: "text", text }),
        row.current ? el("span", { class: "badge current", text: "leaf" }) : null,
      );
      node.style.top = top;
      node.addEventListener("click", () => this.select(row.id, { notify: true }));
      node.addEventListener("dblclick", () => this.onActivate(row.id));
      return node;
    }

    openRun(run) {
      this.expandedRuns.add(run.firstId);
      if (this.expandRun(run)) this.rebuild();
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
      else if (top + ROW > this.scroller.scrollTop + view) this.scroller.scrollTop = top + ROW - view;
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
          if (row && row.children && !this.folded.has(row.id)) this.toggleFold(row.id);
          else if (row && row.parentId) this.select(row.parentId, { notify: true });
          break;
        case "ArrowRight":
          if (row && row.children && this.folded.has(row.id)) this.toggleFold(row.id);
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

  // Indent like a tree: a branch point's children (its continuation and each branch) sit one step in.
  function assignIndent(items) {
    const base = new Map(); // segment → indent of its first item
    const steps = new Map(); // segment → branch points passed so far in it
    const byId = new Map();
    for (const item of items) {
      if (!base.has(item.segment)) {
        const parent = item.parentId != null ? byId.get(item.parentId) : undefined;
        base.set(item.segment, parent ? parent.indent + 1 : 0);
        steps.set(item.segment, 0);
      }
      item.indent = base.get(item.segment) + steps.get(item.segment);
      if (item.kind === "node") {
        byId.set(item.id, item);
        if (item.children) steps.set(item.segment, steps.get(item.segment) + 1);
      } else {
        byId.set(item.lastId, item);
      }
    }
  }

  // For each segment: its parent segment and start depth, read from the first item drawn for it.
  function segmentInfo(items) {
    const segmentOf = new Map();
    for (const item of items) {
      if (item.kind === "node") segmentOf.set(item.id, item.segment);
      else segmentOf.set(item.lastId, item.segment);
    }
    const info = new Map();
    for (const item of items) {
      if (info.has(item.segment)) continue;
      const start = item.kind === "run" ? item.depthFrom : item.depth;
      info.set(item.segment, { start, parent: item.parentId != null ? segmentOf.get(item.parentId) : undefined });
    }
    return info;
  }

  function isDescendant(item, ancestor, segments) {
    let segment = item.segment;
    let depth = item.kind === "run" ? item.depthFrom : item.depth;
    // Walk up segment by segment; the number of steps is the branch nesting, not the depth.
    let climbed = false;
    for (let guard = 0; guard < 100000 && segment !== undefined; guard += 1) {
      // Within one segment, deeper means below; a branch hanging at the ancestor's own depth is below too.
      if (segment === ancestor.segment) return climbed ? depth >= ancestor.depth : depth > ancestor.depth;
      const info = segments.get(segment);
      if (!info || info.parent === undefined) return false;
      depth = info.start - 1;
      segment = info.parent;
      climbed = true;
    }
    return false;
  }

  Pi.TreeView = TreeView;
})(window.Pi);
