// While Pi runs, piweb shows the session as "live from Pi on <device>": each push names the device,
// and between pushes a beat says Pi is still there. Quitting (or /piweb off) says it is gone, so the
// page does not wait for the beats to lapse. A beat that fails is only skipped: presence is a courtesy.

export const BEAT_MS = 15000;

export class Beat {
  /**
   * `send(leaving)` posts one beat and resolves to the server's answer (`{heartbeat}` in seconds);
   * `active()` says whether this session is sent at all now (on piweb, not off, not private).
   */
  constructor({ send, active, everyMs = BEAT_MS }) {
    this.send = send;
    this.active = active;
    this.everyMs = everyMs;
    this.timer = null;
    this.stopped = false;
  }

  start() {
    if (this.stopped || this.timer) return;
    this.timer = setInterval(() => this.tick(), this.everyMs);
    this.timer.unref?.(); // never keeps Pi alive
  }

  async tick() {
    if (this.stopped || !this.active()) return false;
    try {
      const answer = await this.send(false);
      const every = Number(answer?.heartbeat) * 1000;
      if (every > 0 && every !== this.everyMs) {
        this.everyMs = every;
        this.#restart();
      }
      return true;
    } catch {
      return false;
    }
  }

  /** Say Pi is gone, waiting at most `ms`; no more beats after this unless `start()` again. */
  async leave(ms) {
    this.#clear();
    if (!this.active()) return false;
    let timeout;
    const late = new Promise((resolve) => {
      timeout = setTimeout(() => resolve(false), ms);
      timeout.unref?.();
    });
    const sent = this.send(true).then(
      () => true,
      () => false,
    );
    const done = await Promise.race([sent, late]);
    clearTimeout(timeout);
    return done;
  }

  stop() {
    this.stopped = true;
    this.#clear();
  }

  #restart() {
    this.#clear();
    this.start();
  }

  #clear() {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }
}

/** One beat over HTTP: `POST /api/sync/presence/` with the Pi session id and this device. */
export function httpBeat({ server, token, device, timeoutMs = 5000, fetchImpl = globalThis.fetch }) {
  return async (piId, leaving) => {
    const response = await fetchImpl(`${server}/api/sync/presence/`, {
      method: "POST",
      headers: {
        Authorization: `Bearer ${token}`,
        "Content-Type": "application/json",
        "User-Agent": "pi-piweb/0.1.0",
      },
      body: JSON.stringify({ piId, device, leaving }),
      signal: AbortSignal.timeout(timeoutMs),
    });
    const payload = await response.json().catch(() => ({}));
    if (response.status !== 200) throw new Error(payload.error || `HTTP ${response.status}`);
    return payload;
  };
}
