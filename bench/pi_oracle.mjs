// Pi 1.6.0's own answers in the shape `manage.py sessiontool` prints, for differential tests.
//
// Usage: node pi_oracle.mjs batch            (one JSON argv per stdin line, one JSON answer per line)
//        node pi_oracle.mjs COMMAND ARGS...  (one answer)
// Commands: project, cut, fork, branch-summary, branch-with-summary, context-edit, overflow, with the
// argv of the shared conformance cases. Every answer comes from Pi's published modules in
// bench/node_modules (SessionManager, the projection, the compaction and branch-summary helpers, pi-ai's
// overflow check); this file only shapes their results. Values Pi makes up at random are written as the
// conformance placeholders (<NEW-ENTRY>, <NEW-SESSION-ID>, <NOW>, @N, ...) so any run compares with
// another. Each request opens a private copy of its file, because opening may migrate or append to it.
import { copyFileSync, existsSync, mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath, pathToFileURL } from "node:url";

const HERE = dirname(fileURLToPath(import.meta.url));
const MODULES = process.env.PI_NODE_MODULES ?? join(HERE, "node_modules");
const CORE = pathToFileURL(join(MODULES, "@earendil-works", "pi-coding-agent", "dist", "core") + "/");
const AI = pathToFileURL(join(MODULES, "@earendil-works", "pi-ai", "dist") + "/");

const { SessionManager, buildSessionProjection, loadEntriesFromFile } = await import(
  new URL("session-manager.js", CORE).href
);
const compaction = await import(new URL("compaction/index.js", CORE).href);
const { convertToLlm } = await import(new URL("messages.js", CORE).href);
const { isContextOverflow, isRecoverableLength } = await import(new URL("utils/overflow.js", AI).href);

const ROLE_KEYS = {
  user: ["content", "timestamp"],
  assistant: ["content", "provider", "model", "stopReason", "errorMessage", "usage", "timestamp"],
  toolResult: ["toolCallId", "toolName", "content", "isError", "timestamp"],
  system: ["content", "sections", "toolsAdded", "toolsRemoved", "timestamp"],
  custom: ["customType", "content", "display", "details", "timestamp"],
  bashExecution: [
    "command",
    "output",
    "exitCode",
    "cancelled",
    "truncated",
    "fullOutputPath",
    "excludeFromContext",
    "timestamp",
  ],
  branchSummary: ["summary", "fromId", "timestamp"],
  compactionSummary: ["summary", "tokensBefore", "timestamp"],
};
const USAGE_KEYS = ["input", "output", "cacheRead", "cacheWrite", "totalTokens"];

// ---- shaping -------------------------------------------------------------------------------------

function blockView(block) {
  if (block === null || typeof block !== "object" || Array.isArray(block)) return block;
  switch (block.type) {
    case "text":
      return { type: block.type, text: block.text };
    case "thinking":
      return block.redacted ? { type: block.type, thinking: block.thinking, redacted: true } : { type: block.type, thinking: block.thinking };
    case "toolCall":
      return { type: block.type, id: block.id, name: block.name, arguments: block.arguments };
    case "image":
      return {
        type: "image",
        mimeType: block.mimeType,
        dataLength: typeof block.data === "string" ? block.data.length : 0,
      };
    default:
      return block;
  }
}

const contentView = (content) => (Array.isArray(content) ? content.map(blockView) : content);

function attempt(compute) {
  try {
    return compute();
  } catch (error) {
    return `<THROWS ${String(error?.message ?? error).slice(0, 60)}>`;
  }
}

function messageView(message, source, withSource = true) {
  const out = withSource ? { source } : {};
  out.tokens = attempt(() => compaction.estimateTokens(message));
  out.role = message?.role;
  const keys = ROLE_KEYS[message?.role] ?? ["content", "timestamp"];
  for (const key of keys) {
    if (!(key in message)) continue;
    let value = message[key];
    if (key === "content") value = contentView(value);
    else if ((key === "toolsAdded" || key === "toolsRemoved") && Array.isArray(value))
      value = value.map((tool) => (tool !== null && typeof tool === "object" ? tool.name : tool));
    else if (key === "usage" && value !== null && typeof value === "object" && !Array.isArray(value)) {
      const picked = {};
      for (const k of USAGE_KEYS) if (k in value) picked[k] = value[k];
      value = picked;
    }
    out[key] = value;
  }
  return out;
}

function llmView(message) {
  const out = { role: message.role, content: contentView(message.content) };
  if (message.role === "toolResult") out.toolCallId = message.toolCallId;
  return out;
}

function estimateView(estimate) {
  return {
    tokens: estimate.tokens,
    usageTokens: estimate.usageTokens,
    trailingTokens: estimate.trailingTokens,
    lastUsageIndex: estimate.lastUsageIndex ?? null,
  };
}

const fileOpsView = (ops) => ({ read: [...ops.read], written: [...ops.written], edited: [...ops.edited] });

/** Replace every string equal to a key of `names` by its placeholder, everywhere in `value`. */
function rename(value, names) {
  if (typeof value === "string") return names.has(value) ? names.get(value) : value;
  if (Array.isArray(value)) return value.map((item) => rename(item, names));
  if (value !== null && typeof value === "object") {
    const out = {};
    for (const [k, v] of Object.entries(value)) out[k] = rename(v, names);
    return out;
  }
  return value;
}

// ---- loading -------------------------------------------------------------------------------------

class Workspace {
  constructor(file) {
    this.dir = mkdtempSync(join(tmpdir(), "pi-oracle-"));
    this.copy = join(this.dir, "session.jsonl");
    copyFileSync(file, this.copy);
  }
  close() {
    rmSync(this.dir, { recursive: true, force: true });
  }
}

class NotASession extends Error {}

/** Pi's own refusals (`Entry X not found`) are answers; a TypeError inside Pi's code is Pi crashing. */
function failure(error) {
  if (error instanceof TypeError || error instanceof RangeError) return { piCrashed: `${error.name}: ${error.message}` };
  return { error: error.message };
}

function open(ws) {
  const raw = loadEntriesFromFile(ws.copy);
  const rawHeader = raw[0];
  const rawIds = raw.map((entry) => (entry !== null && typeof entry === "object" ? entry.id : undefined));
  const emptyFile = statSync(ws.copy).size === 0;
  let manager;
  try {
    manager = SessionManager.open(ws.copy, ws.dir);
  } catch (error) {
    throw new NotASession(String(error.message).split(ws.copy).join("<FILE>"));
  }
  const migrated = !emptyFile && rawHeader?.type === "session" && (rawHeader.version ?? 1) < 3;
  // Ids made up while migrating a v1 file are shown as @N, N being the parsed line's index.
  const generated = new Map();
  if (migrated) {
    manager.fileEntries.forEach((entry, index) => {
      if (index > 0 && entry?.id !== undefined && entry.id !== rawIds[index]) generated.set(entry.id, `@${index}`);
    });
  }
  return { manager, raw, rawHeader, emptyFile, migrated, generated };
}

function treeView(manager) {
  const roots = manager.getTree();
  const children = [];
  const stack = [...roots].reverse();
  while (stack.length) {
    const node = stack.pop();
    if (node.children.length) children.push([node.entry.id, node.children.map((child) => child.entry.id)]);
    for (let i = node.children.length - 1; i >= 0; i--) stack.push(node.children[i]);
  }
  return { roots: roots.map((node) => node.entry.id), children };
}

function loadView(loaded) {
  const { manager, raw, rawHeader, emptyFile, migrated, generated } = loaded;
  const header = manager.getHeader() ?? {};
  const out = {
    header: { version: header.version, id: header.id, cwd: header.cwd, parentSession: header.parentSession },
    rawHeaderVersion: emptyFile ? null : (rawHeader?.version ?? 1),
    fileEffect: emptyFile ? "initialized" : migrated ? "rewritten" : "none",
    parsedLineCount: emptyFile ? 1 : raw.length,
    entryCount: manager.byId.size, // distinct ids: a duplicate counts once, every id-less line once together
    fileLeafId: manager.getLeafId(),
    labels: [...manager.labelsById],
    labelTimestamps: [...manager.labelTimestampsById],
    sessionName: manager.getSessionName() ?? null,
    tree: treeView(manager),
  };
  if (emptyFile) {
    out.header.id = "<GENERATED-SESSION-ID>";
    out.header.cwd = "<PROCESS_CWD>";
  }
  if (migrated) {
    out.rewrittenFile = manager.fileEntries.map((entry) => {
      let line = JSON.stringify(entry);
      for (const [id, alias] of generated) line = line.split(JSON.stringify(id)).join(JSON.stringify(alias));
      return line;
    });
  }
  return rename(out, generated);
}

/** Move the manager's leaf as the commands do: "null" resets it, a known id selects it, else the last entry. */
function selectLeaf(manager, leafArg) {
  if (leafArg === "null") manager.resetLeaf();
  else if (leafArg !== undefined && manager.byId.has(leafArg)) manager.branch(leafArg);
}

function projectionView(manager) {
  const path = manager.getBranch();
  const projection = manager.buildSessionProjection();
  return {
    effectiveLeafId: manager.getLeafId(),
    path: path.map((entry) => entry.id),
    contextEntries: projection.entries.map((pe) => pe.sourceEntry.id),
    projected: projection.entries.map((pe) => ({
      id: pe.sourceEntry.id,
      type: pe.sourceEntry.type,
      messages: pe.messages.length,
    })),
    messages: projection.entries.flatMap((pe) => pe.messages.map((m) => messageView(m, pe.sourceEntry.id))),
    llm: attempt(() => convertToLlm(projection.messages).map(llmView)),
    thinkingLevel: projection.thinkingLevel,
    model: projection.model,
    estimateContextTokens: attempt(() => estimateView(compaction.estimateContextTokens(projection.messages))),
    estimateProjectedContextTokens: attempt(() =>
      estimateView(compaction.estimateProjectedContextTokens(projection, path)),
    ),
  };
}

function splitOptions(args) {
  const positional = [];
  const options = {};
  for (const arg of args) {
    const match = /^--([^=]+)=(.*)$/s.exec(arg);
    if (match) options[match[1]] = match[2];
    else positional.push(arg);
  }
  return { positional, options };
}

// ---- commands ------------------------------------------------------------------------------------

function project([file, leafArg]) {
  const ws = new Workspace(file);
  try {
    const loaded = open(ws);
    const { manager } = loaded;
    const load = loadView(loaded);
    selectLeaf(manager, leafArg);
    const out = {
      load,
      leafArg: leafArg === "null" ? null : (leafArg ?? manager.getLeafId()),
      ...rename(projectionView(manager), loaded.generated),
    };
    return out;
  } catch (error) {
    if (error instanceof NotASession) return { error: error.message, fileEffect: "none" };
    return failure(error);
  } finally {
    ws.close();
  }
}

/** Map prepared messages back to the entries that produced them (they keep their order). */
function sources(messages, projected) {
  const flat = projected.flatMap((pe) => pe.messages.map((m) => [pe.sourceEntry.id, JSON.stringify(m)]));
  let at = 0;
  return messages.map((message) => {
    const text = JSON.stringify(message);
    while (at < flat.length && flat[at][1] !== text) at++;
    const source = at < flat.length ? flat[at++][0] : null;
    return { source, role: message.role };
  });
}

function cut(args) {
  const { positional, options } = splitOptions(args);
  const [file, keepArg] = positional;
  const ws = new Workspace(file);
  try {
    const loaded = open(ws);
    const { manager } = loaded;
    const fileLeafId = manager.getLeafId();
    selectLeaf(manager, options.leaf);
    const branch = manager.getBranch();
    const settings = {
      enabled: true,
      reserveTokens: options.reserve === undefined ? compaction.DEFAULT_COMPACTION_SETTINGS.reserveTokens : Number(options.reserve),
      keepRecentTokens: Number(keepArg),
    };
    const prep = compaction.prepareCompaction(branch, settings);
    let result = null;
    if (prep) {
      const projected = buildSessionProjection(branch).entries;
      const lists = compaction.computeFileLists(prep.fileOps);
      result = {
        firstKeptEntryId: prep.firstKeptEntryId,
        isSplitTurn: prep.isSplitTurn,
        tokensBefore: prep.tokensBefore,
        previousSummary: prep.previousSummary ?? null,
        messagesToSummarize: sources(prep.messagesToSummarize, projected),
        turnPrefixMessages: sources(prep.turnPrefixMessages, projected),
        fileOps: fileOpsView(prep.fileOps),
        fileLists: lists,
        fileListsText: compaction.formatFileOperations(lists.readFiles, lists.modifiedFiles),
        serializedHistory: compaction.serializeConversation(convertToLlm(prep.messagesToSummarize)),
        serializedTurnPrefix: compaction.serializeConversation(convertToLlm(prep.turnPrefixMessages)),
      };
    }
    const out = {
      load: { fileEffect: loaded.migrated ? "rewritten" : "none", fileLeafId },
      leafId: manager.getLeafId(),
      branch: branch.map((entry) => entry.id),
      settings,
      result,
    };
    if (!prep) {
      // What a manual compaction answers when there is no plan (AgentSession.compact's two messages).
      out.manualCompactError =
        branch.length && branch[branch.length - 1].type === "compaction"
          ? "Already compacted"
          : "Nothing to compact (session too small)";
    }
    // The reference answers say whether to compact only when there is a plan.
    if (options.window !== undefined && prep) {
      const tokens = compaction.estimateProjectedContextTokens(buildSessionProjection(branch), branch).tokens;
      const window = Number(options.window);
      out.shouldCompact = { contextWindow: window, tokens, result: compaction.shouldCompact(tokens, window, settings) };
    }
    return rename(out, loaded.generated);
  } catch (error) {
    if (error instanceof NotASession) return { error: error.message, fileEffect: "none" };
    return failure(error);
  } finally {
    ws.close();
  }
}

function fork([file, leafId]) {
  const ws = new Workspace(file);
  try {
    const loaded = open(ws);
    const { manager } = loaded;
    const before = new Set(manager.byId.keys());
    const newFile = manager.createBranchedSession(leafId);
    const header = manager.getHeader();
    const entries = manager.getEntries();
    const names = new Map(loaded.generated);
    let labelCount = 0;
    for (const entry of entries) {
      if (!before.has(entry.id)) names.set(entry.id, `<NEW-LABEL-${++labelCount}>`);
    }
    const written = newFile && existsSync(newFile) ? readFileSync(newFile, "utf8").split("\n").filter(Boolean).length : 0;
    const out = {
      returnedFile: "<NEW-FILE>",
      fileWrittenLines: written,
      header: {
        version: header.version,
        id: "<NEW-SESSION-ID>",
        timestamp: "<NEW-TIMESTAMP>",
        cwd: header.cwd,
        parentSession: header.parentSession === ws.copy ? "<FILE>" : header.parentSession,
      },
      entries: entries.map((entry) => {
        const view = { id: entry.id, parentId: entry.parentId, type: entry.type };
        if (entry.type === "label") Object.assign(view, { targetId: entry.targetId, label: entry.label, timestamp: entry.timestamp });
        else if (entry.type === "compaction" && "firstKeptEntryId" in entry) view.firstKeptEntryId = entry.firstKeptEntryId;
        return view;
      }),
      labels: [...manager.labelsById],
      leafId: manager.getLeafId(),
      context: manager.buildSessionProjection().entries.map((pe) => pe.sourceEntry.id),
    };
    return rename(out, names);
  } catch (error) {
    return failure(error);
  } finally {
    ws.close();
  }
}

function branchSummary([file, oldLeaf, target, budgetArg]) {
  const ws = new Workspace(file);
  try {
    const loaded = open(ws);
    const { manager } = loaded;
    const budget = budgetArg === undefined ? 0 : Number(budgetArg);
    const collected = compaction.collectEntriesForBranchSummary(manager, oldLeaf === "null" ? null : oldLeaf, target);
    const prep = compaction.prepareBranchEntries(collected.entries, budget);
    const out = {
      commonAncestorId: collected.commonAncestorId,
      entries: collected.entries.map((entry) => entry.id),
      tokenBudget: budget,
      messages: prep.messages.map((m) => messageView(m, null, false)),
      totalTokens: prep.totalTokens,
      fileOps: fileOpsView(prep.fileOps),
      fileLists: compaction.computeFileLists(prep.fileOps),
      serialized: compaction.serializeConversation(convertToLlm(prep.messages)),
    };
    return rename(out, loaded.generated);
  } catch (error) {
    return failure(error);
  } finally {
    ws.close();
  }
}

/** Select the starting leaf for an appending command: --leaf=null resets, --leaf=ID must exist. */
function startLeaf(manager, options) {
  if (!("leaf" in options)) return;
  if (options.leaf === "null") manager.resetLeaf();
  else manager.branch(options.leaf);
}

function appended(loaded, entryId, extra) {
  const { manager } = loaded;
  const entry = manager.getEntry(entryId);
  const names = new Map(loaded.generated);
  names.set(entryId, "<NEW-ENTRY>");
  names.set(entry.timestamp, "<NOW>");
  return { entry, names, extra };
}

function branchWithSummary(args) {
  const { positional, options } = splitOptions(args);
  const [file, from, summary] = positional;
  const ws = new Workspace(file);
  try {
    const loaded = open(ws);
    const { manager } = loaded;
    startLeaf(manager, options);
    const oldLeafId = manager.getLeafId();
    const id = manager.branchWithSummary(from === "null" ? null : from, summary);
    const { entry, names } = appended(loaded, id);
    const view = projectionView(manager);
    const stamp = new Date(entry.timestamp).getTime();
    for (const message of view.messages) {
      if (message.source === id && message.timestamp === stamp) message.timestamp = "<NOW>";
    }
    return rename({ oldLeafId, entry, newLeafId: id, leafArg: id, ...view }, names);
  } catch (error) {
    return failure(error);
  } finally {
    ws.close();
  }
}

function contextEdit(args) {
  const { positional, options } = splitOptions(args);
  const [file, target, replacementJson] = positional;
  const ws = new Workspace(file);
  try {
    const loaded = open(ws);
    const { manager } = loaded;
    startLeaf(manager, options);
    const id = manager.appendContextEdit(target, JSON.parse(replacementJson));
    const { entry, names } = appended(loaded, id);
    const { timestamp, ...shown } = entry;
    const projection = manager.buildSessionProjection();
    return rename(
      {
        entry: shown,
        contextEntries: projection.entries.map((pe) => pe.sourceEntry.id),
        messages: projection.entries.flatMap((pe) => pe.messages.map((m) => messageView(m, pe.sourceEntry.id))),
      },
      names,
    );
  } catch (error) {
    return failure(error);
  } finally {
    ws.close();
  }
}

function overflow([file, windowArg]) {
  const data = JSON.parse(readFileSync(file, "utf8"));
  const wrapped = data !== null && typeof data.message === "object" && data.message !== null;
  const message = wrapped ? data.message : data;
  const options = wrapped ? data : {};
  const toNumber = (text) => (text === "null" || text === "undefined" || text === "" ? undefined : Number(text));
  const contextWindow = windowArg !== undefined ? toNumber(windowArg) : options.contextWindow;
  const out = { contextWindow: contextWindow ?? null, isContextOverflow: isContextOverflow(message, contextWindow) };
  if ("desiredMaxOutput" in options) {
    out.desiredMaxOutput = options.desiredMaxOutput;
    out.isRecoverableLength = isRecoverableLength(message, options.desiredMaxOutput);
  }
  return out;
}

const COMMANDS = {
  project,
  cut,
  fork,
  "branch-summary": branchSummary,
  "branch-with-summary": branchWithSummary,
  "context-edit": contextEdit,
  overflow,
};

function answer(argv) {
  const command = COMMANDS[argv[0]];
  if (!command) return { error: `unknown command ${JSON.stringify(argv[0])}` };
  try {
    return command(argv.slice(1));
  } catch (error) {
    return failure(error);
  }
}

// NaN is printed as the "NaN" marker the conformance format uses.
const dump = (value) => JSON.stringify(value, (_key, v) => (typeof v === "number" && Number.isNaN(v) ? "NaN" : v));

const [mode, ...rest] = process.argv.slice(2);
if (mode === "batch") {
  const lines = createInterface({ input: process.stdin, crlfDelay: Number.POSITIVE_INFINITY });
  for await (const line of lines) {
    if (!line.trim()) continue;
    process.stdout.write(`${dump(answer(JSON.parse(line)))}\n`);
  }
} else if (mode) {
  process.stdout.write(`${dump(answer([mode, ...rest]))}\n`);
} else {
  process.stderr.write("usage: node pi_oracle.mjs batch | COMMAND ARGS...\n");
  process.exit(2);
}
