// @ts-check
// Shared helpers: DOM building without HTML strings, and JSON calls to the REST API with the CSRF token.

// A page opened through a share link reads with the link's token (set once by the session page).
let shareToken = null;
export function setShareToken(token) {
  shareToken = token || null;
}
export function getShareToken() {
  return shareToken;
}
// Build an element. Text is always set through text nodes, never parsed as HTML.
/**
 * @template {keyof HTMLElementTagNameMap} K
 * @param {K} tag
 * @param {Record<string, any> | null} [attrs] class, text, on<event>, dataset, style (properties), or an attribute
 * @param {...any} children nodes or text; null, undefined and false are left out
 * @returns {HTMLElementTagNameMap[K]}
 */
export function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (key === "class") node.className = value;
    else if (key === "text") node.textContent = value;
    else if (key.startsWith("on") && typeof value === "function") node.addEventListener(key.slice(2), value);
    else if (key === "dataset") Object.assign(node.dataset, value);
    // Through the CSSOM: the pages' policy refuses style attributes (piweb.csp).
    else if (key === "style") for (const [name, css] of Object.entries(value)) node.style.setProperty(name, String(css));
    else node.setAttribute(key, value === true ? "" : String(value));
  }
  append(node, children);
  return node;
}

/**
 * @template {Node} N
 * @param {N} node
 * @param {any[]} children
 * @returns {N}
 */
export function append(node, children) {
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    node.appendChild(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

/**
 * @template {Node} N
 * @param {N} node
 * @returns {N}
 */
export function clear(node) {
  while (node.firstChild) node.removeChild(node.firstChild);
  return node;
}

export function csrfToken() {
  const input = /** @type {HTMLInputElement | null} */ (document.querySelector("input[name=csrfmiddlewaretoken]"));
  if (input) return input.value;
  const match = document.cookie.match(/(?:^|;\s*)csrftoken=([^;]+)/);
  return match ? decodeURIComponent(match[1]) : "";
}

export class ApiError extends Error {
  constructor(status, body) {
    const message = (body && (body.error || body.detail)) || `Request failed (${status})`;
    super(typeof message === "string" ? message : JSON.stringify(message));
    this.status = status;
    this.body = body;
  }
}

// Call the API; resolves to {status, body}, rejects with ApiError on a non-2xx answer.
export async function api(method, url, body) {
  /** @type {RequestInit & { headers: Record<string, string> }} */
  const init = { method, credentials: "same-origin", headers: { Accept: "application/json" } };
  if (method !== "GET" && method !== "HEAD") init.headers["X-CSRFToken"] = csrfToken();
  if (shareToken) init.headers["X-Share-Token"] = shareToken;
  if (body !== undefined) {
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  const response = await fetch(url, init);
  let parsed = null;
  const type = response.headers.get("Content-Type") || "";
  if (type.includes("json")) parsed = await response.json().catch(() => null);
  if (!response.ok) throw new ApiError(response.status, parsed);
  return { status: response.status, body: parsed };
}

export function query(params) {
  const search = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== null && v !== undefined && v !== "") search.set(k, v);
  const text = search.toString();
  return text ? "?" + text : "";
}
