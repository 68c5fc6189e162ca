// Pure timing functions of the poll loop: no timers, no clock, so tests check exact sequences.

/**
 * Sleep after a cycle, as upstream: the first sleep is min_polling_interval, every later one doubles the previous,
 * capped at polling_interval, and the sequence never shrinks (it restarts only on reload, like upstream's re-exec).
 * If min > max the first sleep is min and every later one is max (upstream's test_main_min_polling_interval).
 */
export function nextSleepSeconds(previous: number | undefined, min: number, max: number): number {
  if (previous === undefined) return min;
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
