// @ts-check
// Markdown for a reply still streaming. The text so far goes through the server's sanitizing renderer,
// the one finished messages use, so an open ``` fence is already a code block. Renders are spaced:
// the first waits RENDER_PAUSE ms for more text, one request is in flight at a time, and the deltas
// that arrive meanwhile go into the next one. Without the renderer (an error, a very long reply) the
// text is shown plain.
import { api, el } from "../api.js";
import { html } from "../render.js";
import { base } from "./page.js";

export const RENDER_PAUSE = 150;
const RENDER_LIMIT = 200000; // characters the renderer takes (the server's own limit)

export class MarkdownStream {
  constructor(onPaint = () => {}) {
    this.text = "";
    /** @type {HTMLElement | null} */
    this.box = null;
    /** @type {number | null} */
    this.timer = null;
    this.busy = false;
    this.plain = false;
    this.closed = false;
    /** @type {string | null} */
    this.shown = null; // the text the box shows, once rendered
    /** @type {Node | null} */
    this.node = null; // what was painted, for a box that replaces this one
    this.onPaint = onPaint;
  }

  // Draw into a (new) box: a redrawn branch panel gets the text written so far at once.
  /** @param {HTMLElement} box */
  attach(box) {
    this.box = box;
    if (this.node) this.box.replaceChildren(this.node.cloneNode(true));
    if (this.text !== this.shown) this.schedule();
  }

  append(delta) {
    this.text += delta;
    this.schedule();
  }

  schedule() {
    if (this.timer || this.busy || this.closed) return;
    this.timer = setTimeout(() => this.render(), RENDER_PAUSE);
  }

  async render() {
    clearTimeout(/** @type {number} */ (this.timer));
    this.timer = null;
    if (this.closed || !this.box) return;
    const text = this.text;
    if (this.plain || text.length > RENDER_LIMIT) {
      this.paint(el("div", { class: "md" }, el("p", { class: "plain-text", text })), text);
      return;
    }
    this.busy = true;
    try {
      const { body } = await api("POST", `${base}/runs/render/`, { text });
      if (!this.closed) this.paint(html(body.html), text);
    } catch (_) {
      this.plain = true; // the saved message is rendered anyway once it arrives
      if (!this.closed) this.paint(el("div", { class: "md" }, el("p", { class: "plain-text", text })), text);
    } finally {
      this.busy = false;
      if (!this.closed && this.text !== text) this.schedule();
    }
  }

  // Called once a box is attached.
  paint(node, text) {
    const box = /** @type {HTMLElement} */ (this.box);
    this.node = node;
    box.replaceChildren(node.cloneNode(true));
    box.dataset.chars = String(text.length);
    this.shown = text;
    this.onPaint();
  }

  close() {
    this.closed = true;
    clearTimeout(/** @type {number} */ (this.timer));
    this.timer = null;
  }
}
