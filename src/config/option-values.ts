import type { OptionSpec } from './option-spec.js';

// What the text of an option, from a file or the command line, becomes: the value of its kind, or why it cannot be.
// The loader keeps the previous value for one that cannot (describe() says which in the problem it reports).

export type Converted =
  // `dropped`: a multi-valued option's entries that were refused (the others are used), and why.
  { ok: true; value: unknown; dropped?: string } | { ok: false; error: string };

/** The values an option was given (a multi-valued one keeps them all; any other the last). */
export function convert(spec: OptionSpec<unknown>, values: readonly string[]): Converted {
  const last = values[values.length - 1] ?? '';
  switch (spec.kind) {
    case 'multi': {
      const given = values.filter((v) => v !== '');
      const problems = given.map((v) => spec.check?.(v));
      const kept = given.filter((_, i) => problems[i] === undefined);
      const refused = problems.filter((e) => e !== undefined);
      if (refused.length === 0) return { ok: true, value: kept };
      return {
        ok: true,
        value: kept,
        dropped: `${refused.length} of ${given.length} entries refused (${refused.join('; ')})`,
      };
    }
    case 'str': {
      if (spec.choices && !spec.choices.includes(last))
        return { ok: false, error: `"${last}" is not one of ${spec.choices.filter((c) => c !== '').join(', ')}` };
      const error = spec.check?.(last);
      return error === undefined ? { ok: true, value: last } : { ok: false, error };
    }
    case 'bool': {
      const v = last.trim().toLowerCase();
      if (['true', '1', 'yes', 'on'].includes(v)) return { ok: true, value: true };
      if (['false', '0', 'no', 'off'].includes(v)) return { ok: true, value: false };
      return { ok: false, error: `"${last}" is not a boolean (true/false)` };
    }
    case 'float':
    case 'int': {
      const n = Number(last.trim());
      if (last.trim() === '' || !Number.isFinite(n)) return { ok: false, error: `"${last}" is not a number` };
      if (spec.kind === 'int' && !Number.isInteger(n)) return { ok: false, error: `"${last}" is not a whole number` };
      if (spec.min !== undefined && n < spec.min) return { ok: false, error: `${n} is below the minimum ${spec.min}` };
      if (spec.max !== undefined && n > spec.max) return { ok: false, error: `${n} is above the maximum ${spec.max}` };
      return { ok: true, value: n };
    }
  }
}

/** The value kept in force, for a problem message ("keeping 30"). */
export function describe(value: unknown, spec?: OptionSpec<unknown>): string {
  if (value === undefined) return 'it unset';
  return spec?.unquoted ? 'the value it had' : JSON.stringify(value);
}
