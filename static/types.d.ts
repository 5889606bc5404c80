// Shapes the pages receive from the server: each page's configuration (the JSON a template embeds with
// json_script) and the messages of the session socket, which live.js passes on as document events. The
// server side is sessions_app/views.py and costs/views.py (pages), live/consumers.py,
// live/presence_socket.py and sessions_app/link_scope.py (socket).
//
// Global declarations, named in JSDoc as Piweb.Name: the modules never write import("…") types, because
// the module_script tag (sessions_app/templatetags/modules.py) reads a relative "…" after an export as an
// import to preload.

declare namespace Piweb {
  /** A model the composer offers (providers.windows.available_models). */
  interface ModelChoice {
    id: number;
    name: string;
    provider: string;
    modelId: string;
    contextWindow: number;
    reasoning: boolean;
    /** False for a text-only model: its pictures are sent as a note that they were omitted. */
    acceptsImages: boolean;
  }

  /** The session page ("session-config"). */
  interface SessionPageConfig {
    readonly session: number;
    readonly canEdit: boolean;
    readonly readOnly: boolean;
    /** Set on a page opened through a share link. */
    readonly shareToken: string | null;
    readonly isOwner: boolean;
    /** Null through a link. */
    readonly userId: number | null;
    readonly entryCount: number;
    readonly lastSeq: number | null;
    readonly contextWindow: number;
    readonly forkModes: readonly string[];
    readonly runsUrl: string | null;
    readonly name: string;
    readonly leafId: string | null;
    readonly models: readonly ModelChoice[];
    readonly isStaff: boolean;
    readonly compactKeepRecentTokens: number;
    readonly maxImageBytes: number;
    readonly maxImages: number;
  }

  /** The compare page ("compare-config"): two entries of one session, from the query string. */
  interface ComparePageConfig {
    readonly session: number;
    readonly a: string;
    readonly b: string;
  }

  /** The usage page ("usage-config"): the teams whose usage the viewer may see (the template lists them). */
  interface UsagePageConfig {
    readonly teams: readonly { id: number; name: string }[];
  }

  /** A team's numbers over a week, a person or a range (activity/queries.py ``Numbers.as_json``). */
  interface ActivityNumbers {
    sessions: number;
    /** Assistant messages. */
    answers: number;
    runs: number;
    failedRuns: number;
    reviews: number;
    cost: number;
    toolCalls: number;
    filesChanged: number;
    /** Tool calls by tool, the most used first. */
    tools: Record<string, number>;
  }

  /** The team activity page ("activity-config"): the report the page shows (activity/views.py). */
  interface ActivityPageConfig {
    readonly team: number;
    readonly report: {
      team: { id: number; name: string };
      from: string;
      to: string;
      /** Every tool named in the range, the most used first. */
      tools: string[];
      totals: ActivityNumbers;
      /** Every ISO week of the range, by its Monday, in order. */
      weeks: (ActivityNumbers & { week: string; label: string })[];
    };
  }

  /** A team's tag as organize's pages receive it. */
  interface OrganizeTag {
    readonly id: number;
    readonly name: string;
    /** One of organize.models.COLOURS: the badge's class is badge-tag-<colour>. */
    readonly colour: string;
    readonly teamName: string;
    readonly team?: number;
    /** Sessions the viewer may read that carry it (the list only). */
    readonly count?: number;
  }

  /** The session list's bulk bar and pin stars ("organize-config" on the list, organize/registry.py). */
  interface OrganizeListConfig {
    /** The sessions on this page the viewer pinned. */
    readonly pinned: readonly number[];
    /** The tags of the viewer's teams. */
    readonly tags: readonly OrganizeTag[];
    /** The viewer's teams (to share with); editor: the viewer may save the team's filters. */
    readonly teams: readonly { id: number; name: string; editor: boolean }[];
    readonly query: string;
  }

  /** The session page's pin, tags and archive ("organize-config" on the session page). */
  interface OrganizeSessionConfig {
    readonly session: number;
    readonly pinned: boolean;
    readonly archived: boolean;
    readonly canArchive: boolean;
    /** The tags of the viewer's teams on the session. */
    readonly tags: readonly OrganizeTag[];
    /** The tags the viewer may put on or take off the session. */
    readonly offered: readonly OrganizeTag[];
  }

  /** The webhooks page ("hooks-config", hooks/views.py): where its list is, the team's name (or null
   * for a person's own hooks) and the events a hook may choose. */
  interface HooksPageConfig {
    readonly listUrl: string;
    readonly team: string | null;
    readonly events: readonly { name: string; label: string }[];
  }

  /** A hook as the hooks API lists it (hooks/queries.py). */
  interface Hook {
    id: number;
    name: string;
    url: string;
    events: string[];
    format: string;
    active: boolean;
    failingSince: string | null;
    lastDeliveredAt: string | null;
    failedDeliveries: number;
    pendingDeliveries: number;
  }

  /** One line of a hook's delivery log. */
  interface HookDelivery {
    id: number;
    deliveryId: string;
    event: string;
    status: string;
    attempts: number;
    createdAt: string;
    nextAttemptAt: string | null;
    lastStatusCode: number | null;
    lastError: string;
    lastResponse: string;
    responseMs: number | null;
    replayOf: number | null;
    payload: unknown;
  }

  /** The socket's answer to a sync: where the session is now. */
  interface StateMessage {
    type: "state";
    session: number;
    seq: number | null;
    leafId: string | null;
    /** Null when the sync named no sequence. */
    behind: boolean | null;
  }

  /**
   * Something happened to the session, after commit (core.realtime.broadcast). Members receive every
   * field; a live tree link receives position events only and a bare "changed" for the rest.
   */
  interface EventMessage {
    type: "event";
    /**
     * entries_appended, leaf_moved, changed, comment, session_deleted, entries_redacted, run_queued,
     * run_started, run_delta, run_tool, run_ended, compaction_start, compaction_end, branch_summary_start,
     * branch_summary_end, auto_retry_start, auto_retry_end, organized (tags or archive changed), ...
     */
    event: string;
    session: number;
    /** The last append sequence, on events that added entries. */
    seq?: number;
    /** leaf_moved */
    leaf?: string;
    /** The run's public id, on run_* events. */
    run?: string;
    /** run_delta: streamed text, thinking or tool-call arguments. */
    delta?: string;
    kind?: "text" | "thinking" | "toolCall";
    index?: number;
    /** run_queued, run_started, runner_state: the runner Pi runs on (none for piweb's own loop), who asked. */
    runner?: string;
    by?: string;
    /** runner_state: whether the runner is connected again. */
    online?: boolean;
    /** run_tool: a tool Pi runs on a runner ("start", "update", "end"), its call, arguments and output. */
    phase?: string;
    toolCallId?: string;
    toolName?: string;
    args?: any;
    output?: string;
    isError?: boolean;
    /** run_ended, compaction_end, branch_summary_end */
    status?: string;
    error?: string | null;
    /** run_ended: the model stopped to call a tool, which piweb does not run. */
    toolUse?: boolean;
    /** compaction_end, branch_summary_end when failed */
    errorMessage?: string | null;
    /** comment: which thread changed (the page reads it over HTTP). */
    entryId?: string;
    threadId?: number;
    commentId?: number;
    change?: string;
  }

  /** One open tab on the session, or a Pi writing it live (the Pi package), as members see it. */
  interface Viewer {
    key: string;
    kind: "user" | "link" | "pi";
    userId: number | null;
    name: string;
    node: string | null;
    /** Where a "pi" writer runs. */
    device?: string;
  }

  /** Who has the session open (members only). */
  interface PresenceMessage {
    type: "presence";
    /** This tab's key among the viewers. */
    you: string;
    /** Seconds between the beats the server expects. */
    heartbeat: number;
    viewers: Viewer[];
  }

  /** The signed-in user's unread discussion count changed. */
  interface InboxMessage {
    type: "inbox";
    unread: number;
  }

  /** The socket did not understand what the page sent. */
  interface ErrorMessage {
    type: "error";
    error: string;
  }

  type SocketMessage = StateMessage | EventMessage | PresenceMessage | InboxMessage | ErrorMessage;

  /** What a page sends: a sync from its last known sequence, or the node it has selected (presence). */
  type ClientMessage = { type: "sync"; seq: number } | { type: "presence"; node: string | null };

  /** A control read by its name from a form: an input, select or textarea, or a group of radio buttons. */
  type NamedControl = HTMLInputElement | HTMLSelectElement | HTMLTextAreaElement | RadioNodeList;

  /** A form whose controls are read by name (form.elements.name), as the templates name them. */
  interface NamedForm extends HTMLFormElement {
    readonly elements: HTMLFormControlsCollection & { [name: string]: NamedControl };
  }

  /** The first page of a search's hits, shared with the modules that show hits of their own. */
  interface SearchDetail {
    query: string;
    /** The search API's answer; empty when the query was cleared. */
    body: { comments?: { id: number; entryId: string; threadId: number; author: string; snippet: string }[]; [field: string]: unknown };
  }
}

// The events the page's modules send each other on document.
interface DocumentEventMap {
  /** Every socket message (live.js). */
  "piweb:socket": CustomEvent<Piweb.SocketMessage>;
  /** A run was queued, started or ended (session/live.js → steering.js). */
  "piweb:run": CustomEvent<Piweb.EventMessage>;
  "piweb:presence": CustomEvent<Piweb.PresenceMessage>;
  /** The socket opened (presence.js announces the selected node). */
  "piweb:live-open": CustomEvent<null>;
  /** The socket is live (again): steering.js asks whether a run is active. */
  "piweb:live": CustomEvent<null>;
  /** The model asked for a tool; entryId names the entry to continue from, when known. */
  "piweb:tool-use": CustomEvent<{ entryId?: string }>;
  "piweb:search": CustomEvent<Piweb.SearchDetail>;
  "piweb:selected": CustomEvent<{ id: string }>;
  /** The inbox page changed the unread count. */
  "piweb:inbox": CustomEvent<{ unread: number }>;
}
