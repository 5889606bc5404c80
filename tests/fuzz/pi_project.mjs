// Answer projection requests with Pi's own SessionManager, for differential tests.
//
// Usage: node pi_project.mjs PI_PACKAGE_DIR
// Reads one JSON request per stdin line, {"file": PATH, "leaf": ID|null}, and writes one JSON line per
// request: {path, contextEntries, messages: [{source, role, tokens}], thinkingLevel, model, estimate} or
// {error}; a token count is null where Pi's estimator throws. The file is opened from a private copy because opening may rewrite it.
import { copyFileSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { pathToFileURL } from "node:url";

const [packageDir] = process.argv.slice(2);
const dist = pathToFileURL(join(packageDir, "dist", "core") + "/");
const { SessionManager } = await import(new URL("session-manager.js", dist).href);
const { estimateContextTokens, estimateTokens } = await import(new URL("compaction/compaction.js", dist).href);

const nan = (value) => (typeof value === "number" && Number.isNaN(value) ? "NaN" : value);

// Pi's estimators throw on some malformed contents (a null content, for one); report that as null.
function attempt(compute) {
  try {
    return compute();
  } catch {
    return null;
  }
}

function answer(request) {
  const dir = mkdtempSync(join(tmpdir(), "pi-project-"));
  try {
    const copy = join(dir, "session.jsonl");
    copyFileSync(request.file, copy);
    const manager = SessionManager.open(copy, dir);
    if (request.leaf !== null && request.leaf !== undefined) manager.branch(request.leaf);
    const projection = manager.buildSessionProjection();
    const estimate = attempt(() => estimateContextTokens(projection.messages));
    return {
      path: manager.getBranch().map((entry) => entry.id),
      contextEntries: projection.entries.map((pe) => pe.sourceEntry.id),
      messages: projection.entries.flatMap((pe) =>
        pe.messages.map((message) => ({
          source: pe.sourceEntry.id,
          role: message.role,
          tokens: attempt(() => nan(estimateTokens(message))),
        })),
      ),
      thinkingLevel: projection.thinkingLevel,
      model: projection.model,
      estimate: estimate && {
        tokens: nan(estimate.tokens),
        usageTokens: nan(estimate.usageTokens),
        trailingTokens: nan(estimate.trailingTokens),
        lastUsageIndex: estimate.lastUsageIndex ?? null,
      },
    };
  } catch (error) {
    return { error: String(error?.message ?? error) };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const lines = createInterface({ input: process.stdin, crlfDelay: Number.POSITIVE_INFINITY });
process.stdout.write(`${JSON.stringify({ ready: true })}\n`);
for await (const line of lines) {
  if (!line.trim()) continue;
  process.stdout.write(`${JSON.stringify(answer(JSON.parse(line)))}\n`);
}
