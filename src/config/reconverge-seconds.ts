// The one rule for a re-run interval, wherever it is given ([deploy] reconverge_interval, a deployment's
// options.reconverge_interval): 0 turns re-runs off; otherwise a number of seconds of at least RECONVERGE_MIN_SECONDS,
// written as a plain decimal number (a JSON number, or text such as "1800" or "90.5"). Hex ("0x10"), exponents and
// signs are refused, as an oslo.config number option refuses them, and so is an interval so short that the tool would
// run back to back (a re-run of puppet or ansible takes seconds to minutes of the server's time).

export const RECONVERGE_MIN_SECONDS = 60;

const DECIMAL = /^\d+(\.\d+)?$/;

/** The seconds `raw` gives (0: off), or what is wrong with it ("not a plain decimal number of seconds"). */
export function reconvergeSeconds(raw: unknown): number | string {
  let seconds: number;
  if (typeof raw === 'number') seconds = raw;
  else if (typeof raw === 'string' && DECIMAL.test(raw.trim())) seconds = Number(raw.trim());
  else return 'not a plain decimal number of seconds';
  if (!Number.isFinite(seconds) || seconds < 0) return 'not a plain decimal number of seconds';
  if (seconds > 0 && seconds < RECONVERGE_MIN_SECONDS)
    return `below the least interval of ${RECONVERGE_MIN_SECONDS} seconds`;
  return seconds;
}
