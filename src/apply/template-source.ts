import { isUtf8 } from 'node:buffer';
import { accessSync, constants as fsConstants, readFileSync, statSync } from 'node:fs';
import { TemplateError } from './apply-errors.js';

// Opening one template: an executable file is a config script (run, not rendered; executable-template.ts), anything
// else is moustache text, read as Python reads it: UTF-8 (a byte-order mark is kept, as Python's "utf-8" codec keeps
// it), with universal newlines (CRLF and lone CR become LF).
//
// Two calls per template, both cheap to enter: a stat for the execute bits, and Node's native UTF-8 read (open, read,
// decode and close in one call). That read replaces invalid bytes with U+FFFD instead of failing, so a text that holds
// U+FFFD is read again as bytes and checked, which only the rare template with that character pays for.

export type TemplateSource = { executable: true } | { executable: false; text: string };

export function readTemplateSource(file: string): TemplateSource {
  let text: string;
  try {
    const st = statSync(file);
    if (!st.isFile())
      throw new TemplateError(`template ${file} is not a regular file; remove it from the template tree`);
    // Most templates have no execute bit at all; for those that do, access(2) decides as upstream's os.access(X_OK).
    if ((st.mode & 0o111) !== 0 && canExecute(file)) return { executable: true };
    text = readFileSync(file, 'utf8');
    if (text.includes('\ufffd') && !isUtf8(readFileSync(file)))
      throw new TemplateError(`could not read template ${file} (not valid UTF-8)`);
  } catch (err) {
    if (err instanceof TemplateError) throw err;
    throw new TemplateError(`could not read template ${file} (${(err as NodeJS.ErrnoException).code ?? String(err)})`, {
      cause: err,
    });
  }
  return { executable: false, text: text.includes('\r') ? text.replace(/\r\n?/g, '\n') : text };
}

function canExecute(file: string): boolean {
  try {
    accessSync(file, fsConstants.X_OK);
    return true;
  } catch {
    return false;
  }
}
