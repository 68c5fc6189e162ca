import type { DeploymentRecord } from '../state/store.js';

// What handling a deployment did, as values: each step of a pass returns the record it left and its effects, and the
// pass's report is counted from the effects (no counters shared between the steps).

export interface DeployFailure {
  readonly id: string;
  readonly name: string;
  readonly reason: string;
}

export type Effect =
  /** Its hook was started. */
  | { readonly kind: 'ran'; readonly id: string }
  /** It completed with a failure (as Heat will judge the signal). */
  | { readonly kind: 'failed'; readonly failure: DeployFailure }
  /** Its record cannot be used: left as it is until the operator clears it. */
  | { readonly kind: 'held'; readonly failure: DeployFailure }
  | { readonly kind: 'skipped'; readonly id: string }
  | { readonly kind: 'removed'; readonly id: string }
  /** Its signal was attempted once already: the outbox's flush of this pass leaves it. */
  | { readonly kind: 'signal-attempted'; readonly id: string }
  /** A shutdown stopped it: the pass ends here. */
  | { readonly kind: 'interrupted' }
  /** The machine is going down for the reboot a deployment asked for: the pass ends here. */
  | { readonly kind: 'awaiting-reboot' };

/** The record as a step left it (undefined: there is none, for a held deployment), and what the step did. */
export interface Step<R extends DeploymentRecord | undefined = DeploymentRecord> {
  readonly record: R;
  readonly effects: readonly Effect[];
}

export function step<R extends DeploymentRecord | undefined>(record: R, ...effects: Effect[]): Step<R> {
  return { record, effects };
}

/** `next`, with `effects` that came before it. */
export function after<R extends DeploymentRecord | undefined>(effects: readonly Effect[], next: Step<R>): Step<R> {
  return { record: next.record, effects: [...effects, ...next.effects] };
}

/** Whether the pass stops after these effects (a shutdown, or the reboot). */
export function stopsPass(effects: readonly Effect[]): boolean {
  return effects.some((e) => e.kind === 'interrupted' || e.kind === 'awaiting-reboot');
}

export function has(effects: readonly Effect[], kind: Effect['kind']): boolean {
  return effects.some((e) => e.kind === kind);
}

/** The deployment ids of one kind of effect, in order. */
export function idsOf(effects: readonly Effect[], kind: 'ran' | 'skipped' | 'removed' | 'signal-attempted'): string[] {
  return effects.flatMap((e) => (e.kind === kind ? [e.id] : []));
}

/** The failures of one kind of effect, in order. */
export function failuresOf(effects: readonly Effect[], kind: 'failed' | 'held'): DeployFailure[] {
  return effects.flatMap((e) => (e.kind === kind ? [e.failure] : []));
}
