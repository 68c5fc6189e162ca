// Prints the event tables of docs/state-machine.md from the state machine (src/state/machine.ts and
// src/state/signal-machine.ts), so the docs cannot drift: test/docs/state-machine.test.ts checks that the page
// contains exactly these tables (UPDATE_DOCS=1 rewrites them).
import { DEPLOYMENT_STATES, EVENTS, isDeploymentState, TRANSITION_EVENTS } from '../src/state/machine.js';
import { SIGNAL_EVENT_NAMES, SIGNAL_EVENTS, SIGNAL_STATES } from '../src/state/signal-machine.js';

/** A list of states as the docs say it: each one, or "any" / "any but" the few left out. */
function states(list: readonly (string | undefined)[], all: readonly string[]): string {
  const named = list.map((s) => (s === undefined ? '(new)' : `\`${s}\``));
  const missing = all.filter((s) => !list.includes(s));
  if (list.includes(undefined) || list.length < 3) return named.join(', ');
  if (missing.length === 0) return 'any';
  return missing.length <= 2 ? `any but ${missing.map((s) => `\`${s}\``).join(', ')}` : named.join(', ');
}

const cell = (text: string) => text.replace(/\|/g, '\\|');

export function deploymentEventsTable(): string {
  const rows = ['| Event | From | To | Signal moves with it | Meaning |', '|---|---|---|---|---|'];
  for (const event of TRANSITION_EVENTS) {
    const rule = EVENTS[event];
    // A target read from the record is named in words.
    const to = isDeploymentState(rule.to) ? `\`${rule.to}\`` : rule.to;
    const moves = (rule.signal ?? []).map((e) => `\`${e}\``).join(', ');
    const signal = rule.signalRequired ? `${moves} (always)` : moves;
    rows.push(`| \`${event}\` | ${states(rule.from, DEPLOYMENT_STATES)} | ${to} | ${signal} | ${cell(rule.meaning)} |`);
  }
  return rows.join('\n');
}

export function signalEventsTable(): string {
  const rows = ['| Event | From | To | Meaning |', '|---|---|---|---|'];
  for (const event of SIGNAL_EVENT_NAMES) {
    const rule = SIGNAL_EVENTS[event];
    rows.push(`| \`${event}\` | ${states(rule.from, SIGNAL_STATES)} | \`${rule.to}\` | ${cell(rule.meaning)} |`);
  }
  return rows.join('\n');
}
