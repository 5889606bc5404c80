// @ts-check
// The page's own icons, drawn as SVG in currentColor: they show on any machine, with or without an emoji
// font, and follow the theme. Each is decoration next to words or a label, so it is hidden from readers.

const SVG = "http://www.w3.org/2000/svg";

// 16×16 outlines.
const PATHS = {
  attach: "M12.5 7.5l-4.8 4.8a2.8 2.8 0 0 1-4-4L9 2.9a1.9 1.9 0 0 1 2.7 2.7l-5.3 5.3a.9.9 0 0 1-1.3-1.3L9.8 4.9",
  comment: "M2.5 3.5h11v7h-6l-3 2.5v-2.5h-2z",
  link: "M6.5 9.5l3-3M7 5l1.2-1.2a2.5 2.5 0 0 1 3.5 3.5L10.5 8.5M9 11l-1.2 1.2a2.5 2.5 0 0 1-3.5-3.5L5.5 7.5",
  terminal: "M2.5 3.5h11v9h-11zM5 6.5l2 1.5-2 1.5M8.5 10h2.5",
};

/**
 * @param {keyof typeof PATHS} name
 * @returns {SVGSVGElement}
 */
export function icon(name) {
  const svg = document.createElementNS(SVG, "svg");
  svg.setAttribute("viewBox", "0 0 16 16");
  svg.setAttribute("width", "1em");
  svg.setAttribute("height", "1em");
  svg.setAttribute("aria-hidden", "true");
  svg.setAttribute("focusable", "false");
  svg.setAttribute("class", `icon icon-${name}`);
  const path = document.createElementNS(SVG, "path");
  path.setAttribute("d", PATHS[name]);
  path.setAttribute("fill", "none");
  path.setAttribute("stroke", "currentColor");
  path.setAttribute("stroke-width", "1.5");
  path.setAttribute("stroke-linecap", "round");
  path.setAttribute("stroke-linejoin", "round");
  svg.appendChild(path);
  return svg;
}
