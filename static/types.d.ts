// Shapes the pages receive from the server: each page's configuration (the JSON a template embeds with
// json_script) and the messages of the session socket. Kept beside the code that reads them; the server
// side is sessions_app/views.py (pages), live/consumers.py and live/presence_rules.py (socket).

/** A model the composer offers (providers.windows.available_models). */
export interface ModelChoice {
  id: number;
  name: string;
  provider: string;
  modelId: string;
  contextWindow: number;
  reasoning: boolean;
}

/** The session page ("session-config"). */
export interface SessionPageConfig {
  session: number;
  canEdit: boolean;
  readOnly: boolean;
  shareToken: string | null;
  isOwner: boolean;
  userId: number | null;
  entryCount: number;
  lastSeq: number | null;
  contextWindow: number;
  forkModes: string[];
  runsUrl: string | null;
  name: string;
  leafId: string | null;
  models: ModelChoice[];
  isStaff: boolean;
  compactKeepRecentTokens: number;
  maxImageBytes: number;
  maxImages: number;
}

/** The compare page ("compare-config"): two entries of one session. */
export interface ComparePageConfig {
  session: number;
  a: string;
  b: string;
}

/** The socket's answer to a sync: where the session is now. */
export interface StateMessage {
  type: "state";
  session: number;
  seq: number | null;
  leafId: string | null;
  behind: boolean | null;
}

/** Something happened to the session (entries_appended, leaf_moved, run_delta, ...), after commit. */
export interface EventMessage {
  type: "event";
  event: string;
  session: number;
  seq?: number;
  [field: string]: unknown;
}

/** One open tab on the session, as members see it. */
export interface Viewer {
  key: string;
  kind: "user" | "link";
  userId: number | null;
  name: string;
  node: string | null;
}

/** Who has the session open (members only). */
export interface PresenceMessage {
  type: "presence";
  you: string;
  heartbeat: number;
  viewers: Viewer[];
}

export type SocketMessage = StateMessage | EventMessage | PresenceMessage;
