import type { AgentConfig } from '../config/options.js';

// Pure timing functions of the poll loop: no timers, no clock, so tests check exact sequences.

/**
 * Sleep after a cycle. The first sleep is min_polling_interval, every later one doubles the previous, capped at
 * polling_interval (upstream's sequence, which never shrinks). `restart`: the sequence starts again at
 * min_polling_interval (after a signal, see nextPollStep). If min > max the first sleep is min and every later one is
 * max (upstream's test_main_min_polling_interval).
 */
export function nextSleepSeconds(previous: number | undefined, min: number, max: number, restart = false): number {
  if (previous === undefined || restart) return min;
  return Math.min(previous * 2, max);
}

/** Spread a fleet: add up to `fraction` of the sleep, chosen by `random` in [0, 1). */
export function withJitter(seconds: number, fraction: number, random: number): number {
  const f = Math.min(Math.max(fraction, 0), 1);
  return seconds * (1 + f * random);
}

/**
 * Phase spreading: when the doubling first reaches polling_interval, one extra random share of a whole interval is
 * added, once. A fleet that booted together (and so polls in lockstep while the sleeps double) then spreads over the
 * whole interval at once, instead of drifting apart by a few per cent per poll. Zero for every other sleep.
 */
export function capPhaseOffset(previous: number | undefined, next: number, max: number, random: number): number {
  const reachedCap = next >= max && (previous === undefined || previous < max);
  return reachedCap && (previous !== undefined || next > 0) ? random * max : 0;
}

/**
 * Initial splay: a whole number of seconds in [0, splay), as upstream's randrange(0, splay) intends. Upstream
 * crashes on a non-integer splay (and on any float under Python 3.12, B9); here the value is floored instead.
 */
export function splaySeconds(splay: number, random: number): number {
  const whole = Math.floor(splay);
  if (whole <= 0) return 0;
  return Math.min(Math.floor(random * whole), whole - 1);
}

/**
 * Polls at min_polling_interval after a signal before the sleeps double again. Heat handles a signal after it has
 * answered it: it marks the deployment complete, creates the next one and only then writes the server's metadata,
 * 0.6–1.5 s after the answer on an idle two-core Heat (more on a busy one). A single poll at +1 s often comes just
 * before the next link is there, and the doubling then made that link wait for the poll at +3 s (or +7 s); three polls
 * at min cover +1, +2 and +3 s. An idle server signals nothing and never holds.
 */
export const POLLS_AT_MIN_AFTER_SIGNAL = 3;

/** What the loop's sleep depends on: the configured intervals, the fleet's jitter, and whether to poll soon after a signal. */
export interface PollTiming {
  readonly min: number;
  readonly max: number;
  readonly jitter: number;
  readonly afterSignal: boolean;
}

/** The timing options of a configuration. */
export function pollTiming(config: AgentConfig): PollTiming {
  const { min_polling_interval: min, polling_interval: max } = config.DEFAULT;
  return { min, max, jitter: config.agent.poll_jitter, afterSignal: config.agent.poll_after_signal };
}

/** Where the loop is in its sequence: the last step, and how many more sleeps stay at min after a signal. */
export interface PollStep {
  readonly sleep: number;
  readonly atMinLeft: number;
}

/** The step after `previous`: a signal restarts at min and holds there; otherwise the sequence doubles as upstream's. */
export function nextPollStep(previous: PollStep | undefined, timing: PollTiming, signalled: boolean): PollStep {
  if (timing.afterSignal && signalled) return { sleep: timing.min, atMinLeft: POLLS_AT_MIN_AFTER_SIGNAL - 1 };
  if (previous !== undefined && previous.atMinLeft > 0) return { sleep: timing.min, atMinLeft: previous.atMinLeft - 1 };
  return { sleep: nextSleepSeconds(previous?.sleep, timing.min, timing.max), atMinLeft: 0 };
}

/**
 * The loop's next sleep after a cycle: `step` is the schedule's position (the next call's `previous`), `seconds` the
 * wait, with the fleet's jitter and the one-time phase spreading at the cap. `signalled`: the agent signalled Heat
 * since the last sleep began (a restart of the sequence when `afterSignal`).
 */
export function pollSleep(
  previous: PollStep | undefined,
  timing: PollTiming,
  signalled: boolean,
  random: () => number,
): { step: PollStep; seconds: number } {
  const step = nextPollStep(previous, timing, signalled);
  const spread = timing.jitter > 0 ? capPhaseOffset(previous?.sleep, step.sleep, timing.max, random()) : 0;
  return { step, seconds: withJitter(step.sleep, timing.jitter, random()) + spread };
}
