import assert from "node:assert/strict";
import { test } from "node:test";

import { costSeries, money } from "../../static/costs/money.js";

test("money reads as dollars, with more digits for the fractions one message costs", () => {
  assert.equal(money(0), "$0");
  assert.equal(money(1234.5), "$1,235");
  assert.equal(money(2.5), "$2.50");
  assert.equal(money(0.123), "$0.123");
  assert.equal(money(0.00123), "$0.0012");
  assert.equal(money(0.00001), "<$0.0001");
});

test("costSeries makes one series per model over every day, days without use at 0, largest model first", () => {
  const rows = [
    { day: "2026-01-03", model: "a", cost: 1 },
    { day: "2026-01-01", model: "b", cost: 5 },
    { day: "2026-01-03", model: "b", cost: 2 },
  ];
  const { models, data } = costSeries(rows);
  assert.deepEqual(models, ["b", "a"]);
  assert.deepEqual(data[0], [1, 2, 3].map((d) => Date.UTC(2026, 0, d) / 1000));
  assert.deepEqual(data.slice(1), [[5, 0, 2], [0, 0, 1]]);
});
