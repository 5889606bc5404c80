// One Pi session's way to the server: the complete lines read from its file and not yet acknowledged
// (the spool, `<id>.jsonl`) and how far the server and the reader stand (`<id>.json`). Both live on
// disk, so what waits for an unreachable server survives a Pi restart and goes out in file order.
import fs from "node:fs";
import path from "node:path";

const NEWLINE = 0x0a;

function fresh() {
  return {
    file: null,
    header: null,
    headerEnd: 0,
    read: { lines: 0, bytes: 0 },
    acked: { lines: 0, bytes: 0, lastId: null },
    // Nothing says what the server already holds: it matches every line by id, so a restart is safe.
    reset: true,
    serverId: null,
    off: false,
    private: false,
  };
}

function fileName(piId) {
  return encodeURIComponent(piId);
}

function writeAtomic(target, text) {
  const temporary = `${target}.${process.pid}.tmp`;
  fs.writeFileSync(temporary, text, { mode: 0o600 });
  fs.renameSync(temporary, target);
}

function lineId(text) {
  try {
    const value = JSON.parse(text);
    return value && typeof value.id === "string" ? value.id : null;
  } catch {
    return null;
  }
}

export class Spool {
  /** @param {string} dir @param {string} piId */
  constructor(dir, piId) {
    this.dir = dir;
    this.piId = piId;
    this.spoolPath = path.join(dir, `${fileName(piId)}.jsonl`);
    this.statePath = path.join(dir, `${fileName(piId)}.json`);
    fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
    this.state = { ...fresh(), ...readJson(this.statePath) };
    /** @type {{n: number, end: number, id: string | null, line: string}[]} */
    this.records = readRecords(this.spoolPath).filter((r) => r.n > this.state.acked.lines);
    // A crash between writing the spool and the state leaves them apart: the spool is the truth, and
    // the reader goes on after its last line (read again from the file if the spool lost a tail).
    const last = this.records.at(-1);
    const held = last ? { lines: last.n, bytes: last.end } : { lines: this.state.acked.lines, bytes: this.state.acked.bytes };
    if (held.lines !== this.state.read.lines) this.state.read = held;
  }

  /** Sessions with lines waiting in `dir` (their Pi ids). */
  static waiting(dir) {
    let names = [];
    try {
      names = fs.readdirSync(dir);
    } catch {
      return [];
    }
    return names
      .filter((name) => name.endsWith(".jsonl") && fs.statSync(path.join(dir, name)).size > 0)
      .map((name) => decodeURIComponent(name.slice(0, -".jsonl".length)));
  }

  get pending() {
    return this.records.length;
  }

  save() {
    writeAtomic(this.statePath, JSON.stringify(this.state));
  }

  /**
   * Copy the complete lines Pi has added to `file` since the last call into the spool; return how many.
   * A file that shrank or got another header was rewritten: it starts over, and the server drops what
   * it already holds. Lines are cut on bytes, so a character split across two writes stays whole.
   */
  capture(file) {
    if (this.state.private || this.state.off) return 0;
    let data;
    try {
      const start = this.state.file === file ? this.state.read.bytes : 0;
      const size = fs.statSync(file).size;
      data = size >= start && start > 0 ? readFrom(file, start - 1, size) : null;
      if (data === null || data[0] !== NEWLINE) {
        return this.#restart(file);
      }
      data = data.subarray(1);
    } catch (error) {
      if (error.code === "ENOENT") return 0; // Pi writes the file once the first answer arrives
      throw error;
    }
    return this.#append(data, this.state.read.bytes);
  }

  #restart(file) {
    const data = fs.readFileSync(file);
    const end = data.indexOf(NEWLINE);
    if (end < 0) return 0;
    const header = data.subarray(0, end).toString("utf8");
    if (lineId(header) !== this.piId) return 0; // not this session's file
    if (this.state.header !== null) {
      this.records = [];
      fs.writeFileSync(this.spoolPath, "", { mode: 0o600 });
    }
    const { serverId, off } = this.state;
    this.state = { ...fresh(), serverId, off, private: this.state.private, file, header, headerEnd: end + 1 };
    this.state.read = { lines: 0, bytes: end + 1 };
    this.state.acked = { lines: 0, bytes: end + 1, lastId: null };
    return this.#append(data.subarray(end + 1), end + 1);
  }

  #append(data, offset) {
    const added = [];
    let start = 0;
    let lines = this.state.read.lines;
    for (let end = data.indexOf(NEWLINE); end >= 0; end = data.indexOf(NEWLINE, start)) {
      const line = data.subarray(start, end).toString("utf8");
      added.push({ n: ++lines, end: offset + end + 1, id: lineId(line), line });
      start = end + 1;
    }
    if (added.length) {
      fs.appendFileSync(this.spoolPath, added.map((r) => JSON.stringify(r) + "\n").join(""), { mode: 0o600 });
      this.records.push(...added);
      this.state.read = { lines, bytes: added[added.length - 1].end };
    }
    this.save();
    return added.length;
  }

  /** The oldest waiting lines: at most `maxLines`, and `maxBytes` unless one line alone is bigger. */
  batch(maxLines, maxBytes) {
    const out = [];
    let size = 0;
    for (const record of this.records) {
      size += Buffer.byteLength(record.line) + 1;
      if (out.length && (out.length >= maxLines || size > maxBytes)) break;
      out.push(record);
    }
    return out;
  }

  /** The server stored everything up to `record` (the last line of a batch it accepted). */
  ack(record, lastId, serverId) {
    this.state.acked = { lines: record.n, bytes: record.end, lastId: lastId ?? this.state.acked.lastId };
    this.state.reset = false;
    if (serverId != null) this.state.serverId = serverId;
    this.records = this.records.filter((r) => r.n > record.n);
    writeAtomic(this.spoolPath, this.records.map((r) => JSON.stringify(r) + "\n").join(""));
    this.save();
  }

  /** The server holds less than we thought (its data was restored, say): read the file again from the top. */
  rewind(file) {
    this.state.header = this.state.header ?? "";
    this.state.read = { lines: 0, bytes: 0 };
    return this.#restart(file);
  }

  /** Forget everything waiting: a private session sends nothing, not even what it spooled before. */
  drop() {
    this.records = [];
    fs.writeFileSync(this.spoolPath, "", { mode: 0o600 });
    this.save();
  }
}

function readFrom(file, start, end) {
  const fd = fs.openSync(file, "r");
  try {
    const buffer = Buffer.alloc(end - start);
    let done = 0;
    while (done < buffer.length) {
      const got = fs.readSync(fd, buffer, done, buffer.length - done, start + done);
      if (got === 0) break;
      done += got;
    }
    return buffer.subarray(0, done);
  } finally {
    fs.closeSync(fd);
  }
}

function readJson(file) {
  try {
    return JSON.parse(fs.readFileSync(file, "utf8"));
  } catch {
    return {};
  }
}

function readRecords(file) {
  let text = "";
  try {
    text = fs.readFileSync(file, "utf8");
  } catch {
    return [];
  }
  const records = [];
  for (const line of text.split("\n")) {
    if (!line) continue;
    try {
      records.push(JSON.parse(line));
    } catch {
      // A record cut short by a crash mid-write: the file still holds the line, the next rewind finds it.
      break;
    }
  }
  return records;
}
