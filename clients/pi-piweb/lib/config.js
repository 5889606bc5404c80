// Where the server, token and privacy rules come from: the same place piweb-sync reads them.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";

export class ConfigError extends Error {}

function xdg(variable, fallback, env) {
  const value = env[variable] || "";
  // The XDG spec says relative values are invalid and must be ignored.
  return value && path.isAbsolute(value) ? value : path.join(env.HOME || os.homedir(), fallback);
}

/** `$PIWEB_SYNC_CONFIG`, else `$XDG_CONFIG_HOME/piweb-sync/config.toml` (piweb-sync's own file). */
export function configPath(env = process.env) {
  if (env.PIWEB_SYNC_CONFIG) return env.PIWEB_SYNC_CONFIG;
  return path.join(xdg("XDG_CONFIG_HOME", ".config", env), "piweb-sync", "config.toml");
}

/** `$PIWEB_PI_STATE`, else `$XDG_STATE_HOME/pi-piweb`: the spool and each session's progress. */
export function stateDir(env = process.env) {
  if (env.PIWEB_PI_STATE) return env.PIWEB_PI_STATE;
  return path.join(xdg("XDG_STATE_HOME", ".local/state", env), "pi-piweb");
}

/**
 * The small part of TOML the config uses: `key = "text"`, `key = true|false` and `key = ["a", "b"]`
 * (an array may span lines). Anything else is ignored rather than refused, so piweb-sync may grow keys.
 */
export function parseToml(text) {
  const values = {};
  const lines = text.split(/\r?\n/);
  for (let i = 0; i < lines.length; i++) {
    const match = /^\s*([A-Za-z0-9_-]+)\s*=\s*(.*)$/.exec(lines[i]);
    if (!match) continue;
    let rest = match[2];
    if (rest.startsWith("[")) {
      while (!balanced(rest) && i + 1 < lines.length) rest += "\n" + lines[++i];
      values[match[1]] = [...rest.matchAll(/"((?:[^"\\]|\\.)*)"/g)].map((m) => unescape(m[1]));
    } else if (rest.startsWith('"')) {
      const string = /^"((?:[^"\\]|\\.)*)"/.exec(rest);
      if (string) values[match[1]] = unescape(string[1]);
    } else if (/^(true|false)\b/.test(rest)) {
      values[match[1]] = rest.startsWith("true");
    }
  }
  return values;
}

function balanced(text) {
  return text.replace(/"(?:[^"\\]|\\.)*"/g, "").includes("]");
}

function unescape(text) {
  return text.replace(/\\(["\\nt])/g, (_, c) => ({ n: "\n", t: "\t" })[c] ?? c);
}

/**
 * Server, token, this machine's name and the folders whose sessions stay private. The environment
 * (`PIWEB_URL`, `PIWEB_TOKEN`, `PIWEB_DEVICE`) wins over the file; a file others can read is refused,
 * as piweb-sync refuses it.
 */
export function loadConfig(env = process.env) {
  const file = configPath(env);
  let values = {};
  let stat = null;
  try {
    stat = fs.statSync(file);
  } catch {
    stat = null;
  }
  if (stat) {
    if (stat.mode & 0o077) throw new ConfigError(`${file} can be read by other users; run: chmod 600 ${file}`);
    try {
      values = parseToml(fs.readFileSync(file, "utf8"));
    } catch (error) {
      throw new ConfigError(`cannot read ${file}: ${error.message}`);
    }
  }
  const server = (env.PIWEB_URL || (typeof values.server === "string" ? values.server : "")).replace(/\/+$/, "");
  const token = env.PIWEB_TOKEN || (typeof values.token === "string" ? values.token : "");
  if (!server) throw new ConfigError(`no server: set PIWEB_URL or run \`piweb-sync login --server URL\` (${file})`);
  if (!token) throw new ConfigError(`no token: set PIWEB_TOKEN or run \`piweb-sync login\` (${file})`);
  const home = env.HOME || os.homedir();
  const ignore = (Array.isArray(values.ignore) ? values.ignore : []).map((folder) =>
    path.resolve(folder.startsWith("~/") || folder === "~" ? path.join(home, folder.slice(1)) : folder),
  );
  // The name the session's page gives this machine ("live from Pi on <device>").
  const named = env.PIWEB_DEVICE || (typeof values.device === "string" ? values.device : "") || os.hostname();
  const device = named.trim().slice(0, 80) || "this device";
  return { server, token, ignore, file, device };
}

/** Whether a session run in `cwd` lies under one of the ignored folders. */
export function isIgnored(cwd, ignore) {
  const here = path.resolve(cwd);
  return ignore.some((folder) => here === folder || here.startsWith(folder.endsWith(path.sep) ? folder : folder + path.sep));
}
