// The session socket: reconnects with backoff, asks for the current position now and then, and hands
// every event to the page. Events are hints; the page fetches what it is missing over HTTP.
"use strict";

window.Pi = window.Pi || {};

(function (Pi) {
  const SYNC_EVERY_MS = 20000;

  class LiveSession {
    constructor({ session, currentSeq, onState, onEvent, onStatus }) {
      this.url = `${location.protocol === "https:" ? "wss" : "ws"}://${location.host}/ws/sessions/${session}/`;
      // Credentials ride in the subprotocol list, never in the URL that proxies and logs keep.
      this.protocols = Pi.shareToken ? ["piweb", `piweb.link.${Pi.shareToken}`] : ["piweb"];
      this.currentSeq = currentSeq;
      this.onState = onState;
      this.onEvent = onEvent;
      this.onStatus = onStatus;
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
        this.onStatus("live");
        clearInterval(this.timer);
        this.timer = setInterval(() => this.sync(), SYNC_EVERY_MS);
      });
      socket.addEventListener("message", (event) => {
        let message;
        try {
          message = JSON.parse(event.data);
        } catch (_) {
          return;
        }
        if (message.type === "state") this.onState(message);
        else if (message.type === "event") this.onEvent(message);
      });
      socket.addEventListener("close", (event) => {
        clearInterval(this.timer);
        if (event.code === 4409) {
          // The viewer's role was narrowed (an editor made a viewer): reload to show what they may still do.
          this.stopped = true;
          location.reload();
          return;
        }
        if (event.code === 4401 || event.code === 4403) {
          this.stopped = true;
          this.onStatus("denied");
          return;
        }
        if (this.stopped) return;
        this.onStatus("offline");
        setTimeout(() => this.connect(), this.delay);
        this.delay = Math.min(this.delay * 2, 15000);
      });
    }

    sync() {
      if (this.socket && this.socket.readyState === WebSocket.OPEN) {
        this.socket.send(JSON.stringify({ type: "sync", seq: this.currentSeq() }));
      }
    }
  }

  Pi.LiveSession = LiveSession;
})(window.Pi);
