// @ts-check
// The session socket: reconnects with backoff, asks for the current position now and then, and hands
// every event to the page. Events are hints; the page fetches what it is missing over HTTP. A close
// with 4401 (signed out, link expired) or 4403 (access revoked) ends it: reconnecting could not help.
import { getShareToken } from "./api.js";

/** @typedef {"connecting" | "live" | "offline" | "denied"} SocketStatus */

const SYNC_EVERY_MS = 20000;
// Close codes after which the server will not take this page back.
export const ACCESS_ENDED = new Set([4401, 4403]);
// The server closes with this code when the viewer's role was narrowed.
const ROLE_NARROWED = 4409;

export class LiveSession {
  /**
   * @param {{
   *   session: number,
   *   currentSeq: () => number,
   *   onState: (message: Piweb.StateMessage) => void,
   *   onEvent: (message: Piweb.EventMessage) => void,
   *   onStatus: (status: SocketStatus) => void,
   *   checkAccess?: () => Promise<boolean>,
   *   onOpen?: () => void,
   *   onPresence?: (message: Piweb.PresenceMessage) => void,
   * }} handlers onState, onEvent and onPresence get the messages of their type; every message is also
   * sent to the document as a "piweb:socket" event
   */
  constructor({ session, currentSeq, onState, onEvent, onStatus, checkAccess, onOpen, onPresence }) {
    this.url = `${location.protocol === "https:" ? "wss" : "ws"}://${location.host}/ws/sessions/${session}/`;
    // Credentials ride in the subprotocol list, never in the URL that proxies and logs keep.
    const token = getShareToken();
    this.protocols = token ? ["piweb", `piweb.link.${token}`] : ["piweb"];
    this.currentSeq = currentSeq;
    this.onState = onState;
    this.onEvent = onEvent;
    this.onStatus = onStatus;
    this.checkAccess = checkAccess || null;
    this.onOpen = onOpen || (() => {});
    this.onPresence = onPresence || (() => {});
    this.failures = 0; // closes in a row without an open
    this.delay = 500;
    this.stopped = false;
    this.connect();
    // A tab that wakes up or comes back online checks at once instead of waiting for the timer.
    document.addEventListener("visibilitychange", () => document.visibilityState === "visible" && this.sync());
    window.addEventListener("online", () => this.sync());
  }

  connect() {
    this.onStatus("connecting");
    const socket = new WebSocket(this.url, this.protocols);
    this.socket = socket;
    socket.addEventListener("open", () => {
      this.delay = 500;
      this.failures = 0;
      this.onStatus("live");
      clearInterval(this.timer);
      this.timer = setInterval(() => this.sync(), SYNC_EVERY_MS);
      this.onOpen();
    });
    socket.addEventListener("message", (event) => {
      /** @type {Piweb.SocketMessage} */
      let message;
      try {
        message = JSON.parse(event.data);
      } catch (_) {
        return;
      }
      if (message.type === "state") this.onState(message);
      else if (message.type === "event") this.onEvent(message);
      else if (message.type === "presence") this.onPresence(message);
      // Modules of their own (comments, the inbox count) listen for what concerns them.
      document.dispatchEvent(new CustomEvent("piweb:socket", { detail: message }));
    });
    socket.addEventListener("close", (event) => {
      clearInterval(this.timer);
      if (event.code === ROLE_NARROWED) {
        // An editor made a viewer: reload to show what they may still do.
        this.stopped = true;
        location.reload();
        return;
      }
      if (ACCESS_ENDED.has(event.code)) {
        this.deny();
        return;
      }
      if (this.stopped) return;
      this.onStatus("offline");
      this.failures += 1;
      const wait = this.delay;
      this.delay = Math.min(this.delay * 2, 15000);
      // A handshake the server refuses closes without a code of ours: after a few, ask whether the
      // page may still read the session before trying again.
      const check = this.checkAccess && this.failures >= 3 ? this.checkAccess() : Promise.resolve(true);
      check.then((allowed) => {
        if (!allowed) this.deny();
        else if (!this.stopped) setTimeout(() => this.connect(), wait);
      });
    });
  }

  deny() {
    this.stopped = true;
    clearInterval(this.timer);
    this.onStatus("denied");
  }

  // Send a message when the socket is open; says whether it was sent.
  /** @param {Piweb.ClientMessage} message */
  send(message) {
    if (!this.socket || this.socket.readyState !== WebSocket.OPEN) return false;
    this.socket.send(JSON.stringify(message));
    return true;
  }

  sync() {
    if (this.socket && this.socket.readyState === WebSocket.OPEN) {
      this.socket.send(JSON.stringify({ type: "sync", seq: this.currentSeq() }));
    }
  }
}

