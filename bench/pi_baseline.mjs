// Time Pi 1.6.0 opening a session file and projecting its leaf context.
//
// Usage: node --expose-gc pi_baseline.mjs SESSION.jsonl [ITERATIONS]
// Prints one JSON line: {open_ms, context_ms, total_ms, messages, iterations, entry_point}; times are
// medians over ITERATIONS runs after one warmup run, all in this process. Each run opens a fresh copy in a
// temporary directory because SessionManager.open may repair or migrate the file it is given.
import { copyFileSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";
import { performance } from "node:perf_hooks";

const PACKAGE = "@earendil-works/pi-coding-agent";

async function loadSessionManager() {
  try {
    const mod = await import(PACKAGE);
    return { SessionManager: mod.SessionManager, entryPoint: PACKAGE };
  } catch (error) {
    // The package index pulls in modules that need newer Node APIs (fs.globSync); the session manager
    // module itself does not, so fall back to it on older runtimes.
    const indexUrl = import.meta.resolve(PACKAGE);
    const moduleUrl = new URL("./core/session-manager.js", indexUrl).href;
    const mod = await import(moduleUrl);
    return { SessionManager: mod.SessionManager, entryPoint: `${PACKAGE}/dist/core/session-manager.js` };
  }
}

function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

async function main() {
  const [source, iterationsArg] = process.argv.slice(2);
  if (!source) {
    process.stderr.write("usage: node pi_baseline.mjs SESSION.jsonl [ITERATIONS]\n");
    process.exit(2);
  }
  const iterations = Math.max(1, Number.parseInt(iterationsArg ?? "5", 10));
  const { SessionManager, entryPoint } = await loadSessionManager();
  const dir = mkdtempSync(join(tmpdir(), "pi-baseline-"));
  const copy = join(dir, basename(source));
  const opens = [];
  const contexts = [];
  const totals = [];
  let messages = 0;
  try {
    for (let run = 0; run <= iterations; run++) {
      copyFileSync(source, copy);
      globalThis.gc?.();
      const t0 = performance.now();
      const manager = SessionManager.open(copy, dir);
      const t1 = performance.now();
      const context = manager.buildSessionContext();
      const t2 = performance.now();
      messages = context.messages.length;
      if (run === 0) continue; // warmup: JIT and page cache
      opens.push(t1 - t0);
      contexts.push(t2 - t1);
      totals.push(t2 - t0);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  const round = (ms) => Math.round(ms * 1000) / 1000;
  const result = {
    open_ms: round(median(opens)),
    context_ms: round(median(contexts)),
    total_ms: round(median(totals)),
    messages,
    iterations,
    entry_point: entryPoint,
  };
  process.stdout.write(`${JSON.stringify(result)}\n`);
}

await main();
