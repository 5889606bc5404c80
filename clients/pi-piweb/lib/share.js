// Before `/piweb share` makes a link: what the link would show that should not be shared.

/**
 * What piweb's secret scanner found that a link would show and nobody redacted yet: every finding for
 * the whole session, only those on the current branch for a `path` link. "" when there is none.
 */
export function secretsWarning(payload, branch) {
  const findings = Array.isArray(payload?.findings) ? payload.findings : [];
  const onBranch = branch ? new Set(branch.map((entry) => entry.id)) : null;
  const open = findings.filter((f) => !f.redacted && (!onBranch || onBranch.has(f.entryId)));
  if (!open.length) return payload?.scanned === false ? "piweb has not scanned this session for secrets yet." : "";
  const kinds = [...new Set(open.map((f) => f.kind))].join(", ");
  return `The link would show ${open.length === 1 ? "1 secret" : `${open.length} secrets`} piweb found (${kinds}).`;
}
