// @ts-check
// The usage page: totals, a chart of cost per day and model (uPlot, served from static/vendor), a table
// per model. The numbers come from /api/usage/ (mine) or /api/teams/<id>/usage/ (a team I own).
import uPlot from "../vendor/uplot/uPlot.esm.js";
import { api, clear, el, query } from "../sessions_app/api.js";
import { plural } from "../sessions_app/format.js";
import { costSeries, money } from "./money.js";

const COLORS = ["#2f6fdf", "#d9622b", "#2e9e5b", "#a347c2", "#c9a400", "#1b9aaa", "#d1495b", "#6c757d"];
// The template always has these elements.
const scope = /** @type {HTMLSelectElement} */ (document.getElementById("usage-scope"));
const period = /** @type {HTMLSelectElement} */ (document.getElementById("usage-days"));
const box = /** @type {HTMLElement} */ (document.getElementById("usage-chart"));
const errorLine = /** @type {HTMLElement} */ (document.getElementById("usage-error"));
const totals = /** @type {HTMLElement} */ (document.getElementById("usage-totals"));
const empty = /** @type {HTMLElement} */ (document.getElementById("usage-empty"));
const rows = /** @type {HTMLTableSectionElement} */ (document.querySelector("#usage-models tbody"));
/** @type {uPlot | null} */
let chart = null;
let token = 0;

async function load() {
  const mine = ++token;
  const url = scope.value ? `/api/teams/${encodeURIComponent(scope.value)}/usage/` : "/api/usage/";
  errorLine.textContent = "";
  totals.textContent = "Loading…";
  try {
    const { body } = await api("GET", url + query({ days: period.value }));
    if (mine === token) show(body);
  } catch (e) {
    if (mine === token) errorLine.textContent = e.message;
  }
}

function show(body) {
  const t = body.totals;
  const unpriced = t.unpriced ? ` · ${t.unpriced.toLocaleString()} without a price` : "";
  totals.textContent =
    `${money(t.cost)} · ${plural(t.tokens, "token")} · ${plural(t.messages, "answer or summary", "answers and summaries")} in ${plural(body.sessions, "session")}${unpriced}`;
  clear(rows);
  for (const m of body.byModel) {
    const cells = [m.messages, m.input, m.output, m.cacheRead, m.cacheWrite, m.tokens].map((n) => el("td", { text: n.toLocaleString() }));
    rows.append(el("tr", { dataset: { model: m.model } }, el("th", { scope: "row", text: m.model }), ...cells, el("td", { class: "cost", text: money(m.cost) })));
  }
  draw(body.days);
}

/** @param {number | undefined | null} t */
function isoDay(t) {
  return t == null ? "" : new Date(t * 1000).toISOString().slice(0, 10);
}

function draw(days) {
  if (chart) chart.destroy();
  chart = null;
  clear(box);
  empty.hidden = days.length > 0;
  if (!days.length) return;
  const { models, data } = costSeries(days);
  // The x series names the day under the pointer, and nothing (not "--") when the pointer is away.
  const day = { label: "Day", value: (/** @type {any} */ u, /** @type {number | null} */ v) => (v == null ? "" : new Date(v * 1000).toISOString().slice(0, 10)) };
  const series = [day, ...models.map((model, i) => ({ label: model, stroke: COLORS[i % COLORS.length], width: 2, points: { show: true }, value: (u, v) => (v == null ? "" : money(v)) }))];
  const opts = {
    width: Math.max(320, box.clientWidth || 800),
    height: 280,
    series,
    // Ticks on whole days at least: the numbers are per day.
    axes: [{ incrs: [1, 7, 14, 30, 91, 365].map((d) => d * 86400) }, { values: (u, ticks) => ticks.map(money), size: 70 }],
    scales: { x: { time: true } },
    // Days are UTC days, as the server counts them.
    tzDate: (ts) => uPlot.tzDate(new Date(ts * 1000), "Etc/UTC"),
    // The days the axis spans, once it is set: for people reading the page's data, and for tests.
    hooks: { setScale: [(/** @type {any} */ u, /** @type {string} */ key) => { if (key === "x") box.dataset.axis = `${isoDay(u.scales.x.min)}..${isoDay(u.scales.x.max)}`; }] },
  };
  chart = new uPlot(opts, data, box);
  // One day of data is one point, which uPlot would put at the edge of a years-long axis: a day either
  // side keeps it in the middle.
  if (data[0].length === 1) chart.setScale("x", { min: data[0][0] - 86400, max: data[0][0] + 86400 });
  box.dataset.models = String(models.length);
  box.dataset.points = String(data[0].length);
}

scope.addEventListener("change", load);
period.addEventListener("change", load);
window.addEventListener("resize", () => {
  if (chart) chart.setSize({ width: Math.max(320, box.clientWidth), height: 280 });
});
load();
