// @ts-check
// The team activity page: three uPlot charts of the weeks the server embedded ("activity-config"), the
// same numbers the table, the CSV and /api/teams/<id>/activity/ give; and the member's digest choice.
import uPlot from "../vendor/uplot/uPlot.esm.js";
import { api } from "../sessions_app/api.js";
import { money } from "../costs/money.js";

const COLORS = ["#2f6fdf", "#d9622b", "#2e9e5b", "#a347c2", "#c9a400", "#1b9aaa", "#d1495b", "#6c757d"];
const TOOL_SERIES = 7; // the most used tools get a line each; the rest are summed as "other"
const config = /** @type {Piweb.ActivityPageConfig} */ (JSON.parse(document.getElementById("activity-config")?.textContent || "{}"));
const report = config.report;
const errorLine = /** @type {HTMLElement} */ (document.getElementById("activity-error"));
/** @type {{ chart: uPlot, box: HTMLElement }[]} */
const charts = [];

const weeks = report.weeks.map((w) => Date.parse(`${w.week}T00:00:00Z`) / 1000);
const weekOf = (/** @type {any} */ u, /** @type {number | null} */ v) => {
  if (v == null) return "";
  const found = report.weeks[weeks.indexOf(v)];
  return found ? found.label : new Date(v * 1000).toISOString().slice(0, 10);
};

/**
 * @param {string} id
 * @param {{ label: string, values: number[], format?: (n: number) => string }[]} lines
 * @param {(n: number) => string} [axis]
 */
function draw(id, lines, axis) {
  const box = /** @type {HTMLElement} */ (document.getElementById(id));
  const series = [
    { label: "Week", value: weekOf },
    ...lines.map((line, i) => ({
      label: line.label,
      stroke: COLORS[i % COLORS.length],
      width: 2,
      points: { show: true },
      value: (/** @type {any} */ u, /** @type {number | null} */ v) => (v == null ? "" : (line.format || String)(v)),
    })),
  ];
  const opts = {
    width: Math.max(320, box.clientWidth || 800),
    height: 260,
    series,
    axes: [{ incrs: [7, 14, 28, 91, 182, 364].map((d) => d * 86400) }, { values: (/** @type {any} */ u, /** @type {number[]} */ ticks) => ticks.map(axis || String), size: 70 }],
    scales: { x: { time: true }, y: { range: (/** @type {any} */ u, /** @type {number} */ min, /** @type {number} */ max) => [0, Math.max(1, max)] } },
    tzDate: (/** @type {number} */ ts) => uPlot.tzDate(new Date(ts * 1000), "Etc/UTC"),
  };
  const data = /** @type {uPlot.AlignedData} */ ([weeks, ...lines.map((l) => l.values)]);
  const chart = new uPlot(/** @type {any} */ (opts), data, box);
  // One week is one point: a week either side keeps it off the axis's edge.
  if (weeks.length === 1) chart.setScale("x", { min: weeks[0] - 7 * 86400, max: weeks[0] + 7 * 86400 });
  box.dataset.series = String(lines.length);
  box.dataset.points = String(weeks.length);
  charts.push({ chart, box });
}

const count = (/** @type {number} */ n) => n.toLocaleString();
draw("activity-work-chart", [
  { label: "Sessions", values: report.weeks.map((w) => w.sessions), format: count },
  { label: "Runs", values: report.weeks.map((w) => w.runs), format: count },
  { label: "Failed runs", values: report.weeks.map((w) => w.failedRuns), format: count },
  { label: "Reviews", values: report.weeks.map((w) => w.reviews), format: count },
]);
draw("activity-cost-chart", [{ label: "Cost", values: report.weeks.map((w) => w.cost), format: money }], money);

const shown = report.tools.slice(0, TOOL_SERIES);
const rest = report.tools.slice(TOOL_SERIES);
const toolLines = shown.map((tool) => ({ label: tool, values: report.weeks.map((w) => w.tools[tool] || 0), format: count }));
if (rest.length) toolLines.push({ label: "other", values: report.weeks.map((w) => rest.reduce((sum, t) => sum + (w.tools[t] || 0), 0)), format: count });
const toolsEmpty = /** @type {HTMLElement} */ (document.getElementById("activity-tools-empty"));
toolsEmpty.hidden = toolLines.length > 0;
if (toolLines.length) draw("activity-tools-chart", toolLines);

window.addEventListener("resize", () => {
  for (const { chart, box } of charts) chart.setSize({ width: Math.max(320, box.clientWidth), height: 260 });
});

const digest = /** @type {HTMLInputElement} */ (document.getElementById("activity-digest"));
const digestState = /** @type {HTMLElement} */ (document.getElementById("activity-digest-state"));
digest.addEventListener("change", async () => {
  errorLine.textContent = "";
  digest.disabled = true;
  try {
    const { body } = await api("PUT", `/api/teams/${config.team}/activity/digest/`, { digest: digest.checked });
    digest.checked = body.digest;
    digestState.textContent = body.digest ? "You get it on Mondays." : "You no longer get it.";
  } catch (e) {
    digest.checked = !digest.checked;
    errorLine.textContent = e.message;
  } finally {
    digest.disabled = false;
  }
});
