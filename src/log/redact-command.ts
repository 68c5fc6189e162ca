import { isSecretName } from './secret-names.js';

// Command lines as they may be logged: the values given to secret-named options (`--secret-key VALUE`,
// `--password=VALUE`) and secret-named assignments (`MYSQL_PASSWORD=VALUE`, as `docker run --env=...` passes a
// container's environment) are replaced, by the one rule for names (secret-names.ts). Only for text known to be a
// command line: in prose ("--secret-key is missing") the word after an option name is not its value.

const REDACTED = '[REDACTED]';
const OPTION_ALONE = /^--?([A-Za-z][\w-]*)$/;
const OPTION_WITH_VALUE = /^(--?([A-Za-z][\w-]*)=)([^]*)$/;
const ASSIGNMENT = /^(([A-Za-z_]\w*)=)([^]*)$/;

/** An argument vector to log, each secret value replaced; the options and names stay. */
export function redactArgs(args: readonly string[]): string[] {
  const out: string[] = [];
  let valueIsSecret = false;
  for (const arg of args) {
    if (valueIsSecret) {
      out.push(REDACTED);
      valueIsSecret = false;
      continue;
    }
    const alone = OPTION_ALONE.exec(arg);
    if (alone) {
      valueIsSecret = isSecretName(alone[1]!);
      out.push(arg);
      continue;
    }
    const option = OPTION_WITH_VALUE.exec(arg);
    if (option)
      out.push(isSecretName(option[2]!) ? `${option[1]!}${REDACTED}` : `${option[1]!}${assignment(option[3]!)}`);
    else out.push(assignment(arg));
  }
  return out;
}

function assignment(text: string): string {
  const m = ASSIGNMENT.exec(text);
  return m && isSecretName(m[2]!) ? `${m[1]!}${REDACTED}` : text;
}

// In a shell command, at the start of a word: an option with its value after "=" or after blanks (a value there does
// not start with "-", which would be the next option), or an assignment; the value quoted or not.
const VALUE = `"[^"]*"|'[^']*'`;
const SHELL_SECRET = new RegExp(
  [
    `(?<head>--?(?<option>[A-Za-z][\\w-]*)=)(?:${VALUE}|[^\\s"';&|)]*)`,
    `(?<head2>--?(?<option2>[A-Za-z][\\w-]*)[ \\t]+)(?:${VALUE}|[^-\\s"';&|)][^\\s"';&|)]*)`,
    `(?<head3>(?<name>[A-Za-z_]\\w*)=)(?:${VALUE}|[^\\s"';&|)]*)`,
  ]
    .map((alternative) => `(?<=^|[\\s;&|(])${alternative}`)
    .join('|'),
  'g',
);

/** A shell command line to log (a cfn-hup hook's action), each secret option's or assignment's value replaced. */
export function redactShellCommand(text: string): string {
  return text.replace(SHELL_SECRET, (whole: string, ...rest: unknown[]) => {
    const g = rest.at(-1) as Record<string, string | undefined>;
    const name = g.option ?? g.option2 ?? g.name ?? '';
    const head = g.head ?? g.head2 ?? g.head3 ?? '';
    return isSecretName(name) ? `${head}${REDACTED}` : whole;
  });
}
