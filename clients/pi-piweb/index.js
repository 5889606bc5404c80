// pi-piweb: each Pi session goes to piweb as Pi writes it. Pi's events only schedule work; reading the
// session file, spooling and sending happen on timers, so Pi never waits for piweb.
import { isIgnored, loadConfig, stateDir } from "./lib/config.js";
import { Beat, httpBeat } from "./lib/presence.js";
import { Sender, httpPost } from "./lib/sender.js";
import { secretsWarning } from "./lib/share.js";
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
const LEAVE_MS = 500; // and then for saying it is gone (else the page drops it when its beats lapse)

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
    description: "piweb: this session's page and sync state; on, off, private, share [path|frozen|live] [anyway]",
    handler: async (args, ctx) => {
      const [word, ...options] = String(args || "").trim().split(/\s+/);
      if (!live) return ctx.ui.notify("piweb: not configured (set PIWEB_URL and PIWEB_TOKEN)", "warning");
      if (word === "off" || word === "on") live.setOff(word === "off");
      else if (word === "private") live.makePrivate();
      else if (word === "share") {
        const kind = options.find((o) => ["live", "frozen", "path"].includes(o)) || "live";
        return ctx.ui.notify(await live.share(kind, options.includes("anyway"), ctx), "info");
      }
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
    const beatPost = httpBeat(config);
    const beat = new Beat({
      send: (leaving) => beatPost(piId, leaving),
      active: () => Boolean(spool.state.serverId) && !spool.state.off && !spool.state.private,
    });
    beat.start();
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
          timer = setTimeout(capture, 20); // one read for the events of one write (message_end, turn_end, …)
          timer.unref?.();
        }
      },
      async close() {
        if (timer) clearTimeout(timer);
        capture();
        await sender.close(CLOSE_MS);
        // After the last push (a push would show Pi again); an unreachable piweb is not waited for twice.
        if (sender.status !== "offline") await beat.leave(LEAVE_MS);
        beat.stop();
      },
      setOff(off) {
        if (off) void beat.leave(LEAVE_MS);
        spool.state.off = off;
        spool.save();
        if (!off) {
          sender.retry();
          capture();
          beat.start();
        }
        show(sender);
      },
      makePrivate() {
        void beat.leave(LEAVE_MS);
        spool.state.private = true;
        spool.drop();
        show(sender);
      },
      describe() {
        const page = spool.state.serverId ? `${config.server}/sessions/${spool.state.serverId}/` : "(not on piweb yet)";
        return `piweb: ${page} — ${label(spool, sender)}`;
      },
      async share(kind, anyway, ctx) {
        // What Pi wrote so far goes first: the link shows the session as it is now.
        capture();
        await sender.drain();
        const id = spool.state.serverId;
        if (!id) return "piweb: this session is not on piweb yet";
        const call = async (method, route, body) => {
          const response = await fetch(`${config.server}/api/sessions/${id}/${route}`, {
            method,
            headers: { Authorization: `Bearer ${config.token}`, "Content-Type": "application/json" },
            body: body === undefined ? undefined : JSON.stringify(body),
            signal: AbortSignal.timeout(10000),
          });
          return { status: response.status, payload: await response.json().catch(() => ({})) };
        };
        try {
          const found = await call("GET", "secrets/");
          const warning = found.status === 200 ? secretsWarning(found.payload, kind === "path" ? manager.getBranch() : null) : "";
          if (warning && !anyway) {
            const page = `${config.server}/sessions/${id}/`;
            const message = `${warning} Redact them on ${page} first, or share anyway.`;
            const ok = ctx.hasUI ? await ctx.ui.confirm("Share a link that shows secrets?", message) : false;
            if (!ok) return `piweb: not shared. ${message} (/piweb share ${kind} anyway)`;
          }
          const body = { scope: kind === "path" ? "path" : "tree", frozen: kind === "frozen", entryId: null };
          if (kind === "path") body.entryId = manager.getLeafId();
          const made = await call("POST", "links/", body);
          if (made.status !== 201) return `piweb: no link: ${made.payload.error || made.status}`;
          return `piweb: ${kind} link (shown once): ${made.payload.url}${warning ? ` — ${warning}` : ""}`;
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
