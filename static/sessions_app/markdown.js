// A small markdown renderer that builds DOM nodes directly. Input is untrusted: nothing is ever parsed
// as HTML, and links keep only http(s) and mailto targets.
"use strict";

window.Pi = window.Pi || {};

(function (Pi) {
  const SAFE_URL = /^(https?:\/\/|mailto:)/i;

  function safeHref(url) {
    const trimmed = url.trim();
    return SAFE_URL.test(trimmed) ? trimmed : null;
  }

  // Inline: `code`, **strong** / __strong__, *em* / _em_ (underscores never inside words), [text](url), bare http(s) links. No nesting beyond one level
  // of emphasis inside links is needed for transcripts, so a single left-to-right scan suffices.
  const INLINE = /(`+)([\s\S]*?[^`])\1(?!`)|\*\*([^*\n]+)\*\*|(?<!\w)__([^_\n]+)__(?!\w)|\*([^*\s][^*\n]*)\*|(?<!\w)_([^_\s][^_\n]*)_(?!\w)|\[([^\]\n]+)\]\(([^)\s]+)\)|(https?:\/\/[^\s<>()]+[^\s<>().,;:!?'"])/g;

  function inline(text) {
    const frag = document.createDocumentFragment();
    let last = 0;
    INLINE.lastIndex = 0;
    let m;
    while ((m = INLINE.exec(text)) !== null) {
      if (m.index > last) frag.appendChild(document.createTextNode(text.slice(last, m.index)));
      if (m[2] !== undefined) frag.appendChild(Pi.el("code", { text: m[2] }));
      else if (m[3] !== undefined || m[4] !== undefined) frag.appendChild(Pi.el("strong", { text: m[3] ?? m[4] }));
      else if (m[5] !== undefined || m[6] !== undefined) frag.appendChild(Pi.el("em", { text: m[5] ?? m[6] }));
      else if (m[7] !== undefined) frag.appendChild(link(m[7], m[8]));
      else frag.appendChild(link(m[9], m[9]));
      last = INLINE.lastIndex;
    }
    if (last < text.length) frag.appendChild(document.createTextNode(text.slice(last)));
    return frag;
  }

  function link(label, url) {
    const href = safeHref(url);
    if (!href) return document.createTextNode(label === url ? url : `${label} (${url})`);
    return Pi.el("a", { href, text: label, rel: "noopener noreferrer nofollow", target: "_blank" });
  }

  // Block level: fenced code, headings, block quotes, lists, rules and paragraphs.
  Pi.markdown = function (source) {
    const root = document.createDocumentFragment();
    const lines = String(source ?? "").replace(/\r\n?/g, "\n").split("\n");
    let i = 0;
    while (i < lines.length) {
      const line = lines[i];
      const fence = line.match(/^\s*(```+|~~~+)\s*([\w+-]*)/);
      if (fence) {
        const body = [];
        i += 1;
        while (i < lines.length && !lines[i].trim().startsWith(fence[1])) body.push(lines[i++]);
        i += 1;
        const code = Pi.el("code", { text: body.join("\n") });
        if (fence[2]) code.dataset.lang = fence[2];
        root.appendChild(Pi.el("pre", { class: "code" }, code));
        continue;
      }
      if (!line.trim()) {
        i += 1;
        continue;
      }
      const heading = line.match(/^(#{1,6})\s+(.*)$/);
      if (heading) {
        root.appendChild(Pi.el("h" + Math.min(6, heading[1].length + 2), { class: "md-h" }, inline(heading[2])));
        i += 1;
        continue;
      }
      if (/^\s*([-*_])(\s*\1){2,}\s*$/.test(line)) {
        root.appendChild(Pi.el("hr"));
        i += 1;
        continue;
      }
      if (/^\s*>/.test(line)) {
        const quoted = [];
        while (i < lines.length && /^\s*>/.test(lines[i])) quoted.push(lines[i++].replace(/^\s*>\s?/, ""));
        root.appendChild(Pi.el("blockquote", {}, Pi.markdown(quoted.join("\n"))));
        continue;
      }
      const bullet = /^\s*([-*+]|\d+[.)])\s+/;
      if (bullet.test(line)) {
        const ordered = /^\s*\d/.test(line);
        const list = Pi.el(ordered ? "ol" : "ul");
        while (i < lines.length && bullet.test(lines[i])) {
          let item = lines[i++].replace(bullet, "");
          // Indented continuation lines belong to the item.
          while (i < lines.length && /^\s{2,}\S/.test(lines[i]) && !bullet.test(lines[i])) item += " " + lines[i++].trim();
          list.appendChild(Pi.el("li", {}, inline(item)));
        }
        root.appendChild(list);
        continue;
      }
      const para = [];
      while (
        i < lines.length &&
        lines[i].trim() &&
        !/^\s*(```|~~~|#{1,6}\s|>|([-*+]|\d+[.)])\s)/.test(lines[i])
      ) {
        para.push(lines[i++]);
      }
      if (!para.length) para.push(lines[i++]);
      const p = Pi.el("p");
      para.forEach((text, index) => {
        if (index) p.appendChild(Pi.el("br"));
        p.appendChild(inline(text));
      });
      root.appendChild(p);
    }
    return root;
  };
})(window.Pi);
