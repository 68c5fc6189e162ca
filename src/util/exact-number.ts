// Numbers that a JavaScript number cannot carry as Python's json carries them. Python keeps integers exact at any size
// and remembers that `1.0` is a float (it writes it back as `1.0`, `1E5` as `100000.0`, `-0.0` as `-0.0`); a plain
// number would print 12345678901234567890 as 12345678901234567168 and 1.0 as 1. Such a number is read as an
// ExactNumber holding the text Python's json.dumps writes for it; every other number stays a plain number, which the
// serialiser already prints as Python does (NaN and the infinities included).

export class ExactNumber {
  /**
   * @param text what Python's json.dumps writes for the number
   * @param value the nearest double, for arithmetic and comparisons
   */
  constructor(
    readonly text: string,
    readonly value: number,
  ) {}

  valueOf(): number {
    return this.value;
  }

  toString(): string {
    return this.text;
  }

  /** JSON.stringify has no way to write raw digits: it gets the nearest double. Exact output uses pythonJsonDumps. */
  toJSON(): number {
    return this.value;
  }
}

/** The value of a JSON number token (as Python's json grammar reads it), a plain number wherever that is exact. */
export function numberFromToken(token: string): number | ExactNumber {
  const n = Number(token);
  if (!/[.eE]/.test(token)) {
    if (Number.isSafeInteger(n)) return n === 0 ? 0 : n;
    return new ExactNumber(BigInt(token).toString(), n);
  }
  // A float: one with a fraction prints the same shortest digits in both languages; an infinity prints as Infinity.
  if (!Number.isFinite(n) || !Number.isInteger(n)) return n;
  return new ExactNumber(pythonFloatRepr(n), n);
}

/** Python's repr of a float with no fraction: 1.0, 100000.0, -0.0, 1e+16 (exponent form from 1e16 on). */
export function pythonFloatRepr(n: number): string {
  if (Object.is(n, -0)) return '-0.0';
  if (Math.abs(n) < 1e16) return `${n.toFixed(0)}.0`;
  return n.toExponential();
}

/** A JSON number as a double: a plain number, or an ExactNumber's nearest double; undefined for anything else. */
export function numericValue(v: unknown): number | undefined {
  if (typeof v === 'number') return v;
  return v instanceof ExactNumber ? v.value : undefined;
}
