// Text from metadata or from what it ran (deployment names, ids, groups, error messages, hook output) printed to a
// terminal by `status`, `status <id>` and `doctor`. Raw, its control characters would act instead of being shown: an
// ESC sequence rewrites the screen or the window title, a CR or a newline fakes a row, a bidi override shows the
// text in another order than it is. Each is shown escaped instead (\n, \r and \t by name, the rest as \xNN or
// \uNNNN); everything else, non-ASCII letters included, is shown as it is. JSON output needs none of this: JSON
// escaping covers it.

// C0 controls, DEL, C1 controls, the Arabic letter mark, LRM/RLM, the line and paragraph separators, and the bidi
// embeddings, overrides and isolates.
// eslint-disable-next-line no-control-regex -- matching control characters is the point
const UNSAFE = /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;

const NAMED: Readonly<Record<string, string>> = { '\n': '\\n', '\r': '\\r', '\t': '\\t' };

function escaped(ch: string): string {
  const named = NAMED[ch];
  if (named) return named;
  const code = ch.charCodeAt(0);
  return code <= 0xff ? `\\x${code.toString(16).padStart(2, '0')}` : `\\u${code.toString(16).padStart(4, '0')}`;
}

/** One piece of untrusted text as it may be shown on a terminal: on one line, every control character escaped. */
export function terminalText(text: string): string {
  return text.replace(UNSAFE, escaped);
}

/** Text of several lines (a report): each line made safe as terminalText does, the line breaks kept. */
export function terminalLines(text: string): string {
  return text
    .split('\n')
    .map((line) => terminalText(line))
    .join('\n');
}
