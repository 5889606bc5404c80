// pi-piweb: each Pi session goes to piweb as Pi writes it. Pi's events only schedule work; reading the
// session file, spooling and sending happen on timers, so Pi never waits for piweb.
import { isIgnored, loadConfig, stateDir } from "./lib/config.js";
import { Sender, httpPost } from "./lib/sender.js";
import { Spool } from "./lib/spool.js";

const WRITES = [
  "message_end",
  "turn_end",
  "agent_end",
  "agent_settled",
  "session_compact",
  "session_tree",
  "session_info_changed",
  "model_select",
  "thinking_level_select",
];
const CLOSE_MS = 2000; // what a quitting Pi gives an answering server; the rest waits in the spool

export default function piweb(pi) {
  let live = null;
  const others = [];

  pi.on("session_start", (_event, ctx) => {
    live = start(ctx);
  });
  for (const name of WRITES) pi.on(name, () => live?.poke());
  pi.on("session_shutdown", async () => {
    const closing = live;
    live = null;
    await Promise.all([closing?.close(), ...others.splice(0).map((s) => s.close(CLOSE_MS))]);
  });

  pi.registerCommand("piweb", {
    description: "piweb: this session's page and sync state; on, off, private, share [path|frozen|live]",
    handler: async (args, ctx) => {
      const [word, option] = String(args || "").trim().split(/\s+/);
      if (!live) return ctx.ui.notify("piweb: not configured (set PIWEB_URL and PIWEB_TOKEN)", "warning");
      if (word === "off" || word === "on") live.setOff(word === "off");
      else if (word === "private") live.makePrivate();
      else if (word === "share") return ctx.ui.notify(await live.share(option || "live"), "info");
      else if (word) return ctx.ui.notify(`piweb: unknown option ${word}`, "warning");
      ctx.ui.notify(live.describe(), "info");
    },
  });

  function start(ctx) {
    let config;
    try {
      config = loadConfig();
    } catch (error) {
      if (ctx.hasUI) ctx.ui.setStatus("piweb", `piweb: ${error.message}`);
      return null;
    }
    const manager = ctx.sessionManager;
    const file = manager.getSessionFile();
    const piId = manager.getSessionId();
    if (!file || !piId) return null; // an in-memory session has no file to follow
    const dir = stateDir();
    const post = httpPost(config);
    const spool = new Spool(dir, piId);
    if (isIgnored(manager.getCwd?.() ?? ctx.cwd, config.ignore) && !spool.state.private) {
      spool.state.private = true;
      spool.drop();
    }
    const show = (sender) => {
      if (ctx.hasUI) ctx.ui.setStatus("piweb", `piweb: ${label(spool, sender)}`);
    };
    const sender = new Sender({ spool, post, file: () => file, onChange: show });
    let timer = null;
    const capture = () => {
      timer = null;
      try {
        spool.capture(file);
      } catch (error) {
        sender.status = "error";
        sender.reason = error.message;
      }
      show(sender);
      sender.kick(0);
    };
    // Lines left waiting by earlier runs of other sessions go out too, each in its own order.
    for (const other of Spool.waiting(dir)) {
      if (other === piId) continue;
      const waiting = new Spool(dir, other);
      if (waiting.state.private || waiting.state.off || !waiting.state.file) continue;
      const behind = new Sender({ spool: waiting, post, file: () => waiting.state.file });
      others.push(behind);
      behind.kick(0);
    }
    const session = {
      poke() {
        if (!timer) {
          timer = setTimeout(capture, 50);
          timer.unref?.();
        }
      },
      async close() {
        if (timer) clearTimeout(timer);
        capture();
        await sender.close(CLOSE_MS);
      },
      setOff(off) {
        spool.state.off = off;
        spool.save();
        if (!off) {
          sender.retry();
          capture();
        }
        show(sender);
      },
      makePrivate() {
        spool.state.private = true;
        spool.drop();
        show(sender);
      },
      describe() {
        const page = spool.state.serverId ? `${config.server}/sessions/${spool.state.serverId}/` : "(not on piweb yet)";
        return `piweb: ${page} — ${label(spool, sender)}`;
      },
      async share(kind) {
        if (!spool.state.serverId) return "piweb: this session is not on piweb yet";
        const body = { scope: kind === "path" ? "path" : "tree", frozen: kind === "frozen", entryId: null };
        if (kind === "path") body.entryId = manager.getLeafId();
        try {
          const response = await fetch(`${config.server}/api/sessions/${spool.state.serverId}/links/`, {
            method: "POST",
            headers: { Authorization: `Bearer ${config.token}`, "Content-Type": "application/json" },
            body: JSON.stringify(body),
            signal: AbortSignal.timeout(10000),
          });
          const payload = await response.json().catch(() => ({}));
          if (response.status !== 201) return `piweb: no link: ${payload.error || response.status}`;
          return `piweb: ${kind} link (shown once): ${payload.url}`;
        } catch (error) {
          return `piweb: cannot reach ${config.server}: ${error.message}`;
        }
      },
    };
    session.poke(); // lines written before this run (or while piweb was away) go out now
    return session;
  }
}

function label(spool, sender) {
  if (spool.state.private) return "private (never sent)";
  if (spool.state.off) return "off";
  if (sender.status === "offline") return `offline, ${spool.pending} waiting`;
  if (sender.status === "conflict" || sender.status === "error") return `${sender.status}: ${sender.reason}`;
  return spool.pending ? `behind ${spool.pending}` : "synced";
}
