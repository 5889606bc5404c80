// Sends a session's spool to `POST /api/sync/` in batches, off Pi's path: a timer gathers what Pi
// writes in one burst into one request, and an unreachable server is retried with growing pauses
// while the lines wait on disk.

export const MAX_LINES = 1000;
export const MAX_BYTES = 4 * 1024 * 1024;

/** Thrown by `post` when the server cannot be reached or cannot answer now (the batch is kept). */
export class Unreachable extends Error {}

/**
 * `post(control, lines)` sends one batch and resolves to `{status, payload}`; it throws `Unreachable`
 * when the batch should be tried again later. `readFile()` names the session file (for a rewind).
 */
export class Sender {
  constructor({ spool, post, file, delayMs = 150, retryMs = [500, 1000, 2000, 5000, 15000, 30000], onChange = () => {} }) {
    this.spool = spool;
    this.post = post;
    this.file = file;
    this.delayMs = delayMs;
    this.retryMs = retryMs;
    this.onChange = onChange;
    this.status = spool.pending ? "behind" : "synced";
    this.reason = "";
    this.failures = 0;
    this.timer = null;
    this.running = null;
    this.again = false;
    this.stopped = false;
    this.sentAt = null;
  }

  /** Ask for a send soon; several asks within the delay make one batch. */
  kick(delay = this.delayMs) {
    if (this.stopped) return;
    if (this.running) {
      this.again = true;
      return;
    }
    if (this.timer) return;
    this.timer = setTimeout(() => {
      this.timer = null;
      this.drain();
    }, delay);
    this.timer.unref?.(); // never keeps Pi alive
  }

  /** Send everything waiting; resolves when the spool is empty or the server said no or is away. */
  drain() {
    if (this.running) {
      this.again = true;
      return this.running;
    }
    this.running = this.#drain().catch((error) => this.#set("error", String(error?.message || error))).finally(() => {
      this.running = null;
      if (this.again && !this.stopped) {
        this.again = false;
        this.kick(0);
      }
    });
    return this.running;
  }

  async #drain() {
    let rewound = false;
    while (!this.stopped && this.spool.pending && this.status !== "conflict" && this.status !== "error") {
      const batch = this.spool.batch(MAX_LINES, MAX_BYTES);
      const state = this.spool.state;
      const last = batch[batch.length - 1];
      const control = {
        header: state.header,
        from: { lines: state.acked.lines, bytes: state.acked.bytes, lastId: state.acked.lastId },
        to: { lines: last.n, bytes: last.end },
        reset: state.reset,
        path: state.file, // forks name their parent by path, as Pi does
      };
      let answer;
      try {
        answer = await this.post(control, batch.map((r) => r.line));
      } catch (error) {
        if (!(error instanceof Unreachable)) throw error;
        this.#set("offline", error.message);
        const pause = this.retryMs[Math.min(this.failures, this.retryMs.length - 1)];
        this.failures += 1;
        this.kick(pause);
        return;
      }
      this.failures = 0;
      const { status, payload } = answer;
      if (status === 200) {
        const lastId = [...batch].reverse().find((r) => r.id)?.id ?? null;
        this.spool.ack(last, lastId, payload.sessionId);
        this.sentAt = Date.now();
        this.#set(this.spool.pending ? "behind" : "synced", "");
        continue;
      }
      if (status === 409 && payload.kind === "cursor" && !rewound) {
        // The server holds less of this file than we acknowledged: send it again from the top; the
        // server skips every line it holds by id.
        rewound = true;
        this.spool.rewind(this.file());
        continue;
      }
      this.#set(status === 409 ? "conflict" : "error", String(payload.error || `HTTP ${status}`));
      return;
    }
    if (!this.spool.pending && this.status !== "conflict" && this.status !== "error") this.#set("synced", "");
  }

  /** Try to send what waits for at most `ms` (Pi is closing); the rest stays in the spool. */
  async close(ms) {
    if (this.timer) {
      clearTimeout(this.timer);
      this.timer = null;
    }
    const drained = this.drain();
    let timeout;
    const late = new Promise((resolve) => {
      timeout = setTimeout(resolve, ms);
      timeout.unref?.();
    });
    await Promise.race([drained.catch(() => {}), late]);
    clearTimeout(timeout);
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
  }

  /** Start over after a conflict or error (for `/piweb on`). */
  retry() {
    if (this.status === "conflict" || this.status === "error") this.#set(this.spool.pending ? "behind" : "synced", "");
    this.failures = 0;
    this.kick(0);
  }

  #set(status, reason) {
    this.status = status;
    this.reason = reason;
    // Told even when the word stays the same: the footer also counts the lines still waiting.
    this.onChange(this);
  }
}

/**
 * The HTTP side: one streamed request per batch (`application/x-ndjson`: a JSON line with the cursor,
 * then the lines exactly as the file holds them), so no JSON re-encoding can change a byte.
 */
export function httpPost({ server, token, device = "", timeoutMs = 30000, fetchImpl = globalThis.fetch }) {
  return async (control, lines) => {
    // Naming the device tells piweb this Pi is writing the session live (shown on its page).
    const head = device ? { ...control, device } : control;
    const body = JSON.stringify(head) + "\n" + lines.map((line) => line + "\n").join("");
    let response;
    try {
      response = await fetchImpl(`${server}/api/sync/`, {
        method: "POST",
        headers: {
          Authorization: `Bearer ${token}`,
          "Content-Type": "application/x-ndjson",
          "User-Agent": "pi-piweb/0.1.0",
        },
        body,
        signal: AbortSignal.timeout(timeoutMs),
      });
    } catch (error) {
      throw new Unreachable(`cannot reach ${server}: ${error.cause?.code || error.message}`);
    }
    const payload = await response.json().catch(() => ({}));
    if (response.status >= 500 || [401, 403, 429].includes(response.status)) {
      throw new Unreachable(`${server} answered ${response.status}: ${payload.error || response.statusText}`);
    }
    return { status: response.status, payload };
  };
}
