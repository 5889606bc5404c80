// @ts-check
// Pure formatting and shaping of cost numbers. No DOM, so `node --test` runs it as it is.

// Dollars as people read them: cents for a few dollars, more digits for the fractions single messages cost.
export function money(n) {
  const value = Number(n) || 0;
  if (value === 0) return "$0";
  const abs = Math.abs(value);
  if (abs >= 100) return `$${value.toLocaleString("en-US", { maximumFractionDigits: 0 })}`;
  if (abs >= 1) return `$${value.toFixed(2)}`;
  if (abs >= 0.01) return `$${value.toFixed(3)}`;
  if (abs >= 0.0001) return `$${value.toFixed(4)}`;
  return "<$0.0001";
}

const DAY = 86400;

// The chart's data from the API's rows (one per day and model): x is every day from the first to the
// last at 00:00 UTC in seconds, one series of costs per model (0 on days it was not used), models by
// total cost, largest first.
/**
 * @param {{ day: string, model: string, cost: number }[]} rows
 * @returns {{ models: string[], data: [number[], ...number[][]] }} data: the days, then one series per model
 */
export function costSeries(rows) {
  const seen = [...new Set(rows.map((r) => r.day))].sort();
  const days = [];
  if (seen.length) {
    const last = Date.parse(`${seen[seen.length - 1]}T00:00:00Z`) / 1000;
    for (let t = Date.parse(`${seen[0]}T00:00:00Z`) / 1000; t <= last; t += DAY) days.push(new Date(t * 1000).toISOString().slice(0, 10));
  }
  const totals = new Map();
  for (const r of rows) totals.set(r.model, (totals.get(r.model) || 0) + r.cost);
  const models = [...totals.keys()].sort((a, b) => totals.get(b) - totals.get(a) || (a < b ? -1 : 1));
  const at = new Map(days.map((d, i) => [d, i]));
  const series = models.map(() => days.map(() => 0));
  // Every row's day lies in the range just built.
  for (const r of rows) series[models.indexOf(r.model)][/** @type {number} */ (at.get(r.day))] += r.cost;
  const x = days.map((d) => Date.parse(`${d}T00:00:00Z`) / 1000);
  return { models, data: [x, ...series] };
}
