import { terminalText } from '../util/terminal-text.js';

// The text of `status` for a person: columns padded to their widest cell, and the last column (the free text of an
// error) cut to what is left of the terminal's width. Piped into a file or another program, nothing is cut: the full
// text is there for grep.

/** Columns padded to their widest cell, two spaces apart; the last column is not padded, and is cut to fit `width`. */
export function formatTable(columns: readonly string[], rows: readonly (readonly string[])[], width?: number): string {
  // Cells hold names, ids and errors from metadata: shown escaped, so none can fake a row or drive the terminal.
  const cells = rows.map((r) => r.map(terminalText));
  const widths = columns.map((c, i) => Math.max(c.length, ...cells.map((r) => (r[i] ?? '').length)));
  const last = columns.length - 1;
  const before = widths.slice(0, last).reduce((sum, w) => sum + w + 2, 0);
  const room = width === undefined ? undefined : Math.max(width - before, MIN_LAST_COLUMN);
  const line = (cells: readonly string[]) =>
    cells
      .map((c, i) => (i === last ? cut(c, room) : c.padEnd(widths[i]!)))
      .join('  ')
      .trimEnd();
  return [line(columns), ...cells.map(line)].join('\n') + '\n';
}

/** The last column keeps at least this much, even when the others already fill the terminal. */
const MIN_LAST_COLUMN = 16;

/** `text` on one line (runs of white space made one space), cut with an ellipsis to `width` when one is given. */
export function oneLine(text: string, width?: number): string {
  return cut(text.replace(/\s+/g, ' ').trim(), width);
}

function cut(text: string, width: number | undefined): string {
  if (width === undefined || text.length <= width) return text;
  return `${text.slice(0, Math.max(width - 1, 0))}…`;
}

/** An ISO time without its milliseconds; '-' when there is none. */
export function shortTime(iso: string | undefined): string {
  return iso ? iso.replace(/\.\d{3}Z$/, 'Z') : '-';
}

/** `1 attempt`, `3 attempts`: the count and the noun in the number it needs. */
export function count(n: number, singular: string, plural = `${singular}s`): string {
  return `${n} ${n === 1 ? singular : plural}`;
}

/**
 * The width to fit text to: $COLUMNS when it is a number (a person or script asked for it), else the terminal's when
 * stdout is one; undefined (no limit) when the output goes to a pipe or a file.
 */
export function outputWidth(env: NodeJS.ProcessEnv, stdout: { isTTY?: boolean; columns?: number }): number | undefined {
  const asked = Number(env.COLUMNS);
  if (env.COLUMNS !== undefined && Number.isInteger(asked) && asked > 0) return asked;
  if (stdout.isTTY && stdout.columns !== undefined && stdout.columns > 0) return stdout.columns;
  return undefined;
}
