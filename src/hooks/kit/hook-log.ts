import { inputText, isSecretInput, type DeploymentInput } from '../../heat/deployment.js';

// A built-in hook's log. Messages are fixed; values go in fields. Every value of a secret input (the agent's one rule:
// src/heat/deployment.ts) is replaced by *** before a line leaves, also where it appears inside JSON text. Run as an
// executable, a hook writes heat-config's line format to stderr; run inside the agent, its lines go to the agent's
// log. Either way the text lines are kept, as the hook's stderr would have been.

export type HookLogLevel = 'INFO' | 'WARNING' | 'ERROR';
export type HookLogFields = Readonly<Record<string, unknown>>;

/** Where masked lines go: the text line, and the parts it was made of. */
export type HookLogSink = (level: HookLogLevel, message: string, fields: HookLogFields, line: string) => void;

export class HookLog {
  private secrets: string[] = [];
  private readonly lines: string[] = [];

  constructor(
    private readonly name: string,
    private readonly sink: HookLogSink,
    private readonly now: () => Date = () => new Date(),
  ) {}

  /** Registers the values of the deployment's secret inputs (raw, and as they look inside JSON text). */
  addSecrets(inputs: readonly DeploymentInput[]): void {
    const found = new Set(this.secrets);
    for (const { name, value } of inputs) {
      if (!isSecretInput(name)) continue;
      for (const text of secretTexts(value)) {
        found.add(text);
        found.add(JSON.stringify(text).slice(1, -1));
      }
    }
    // Longest first, so a secret that contains another is replaced whole.
    this.secrets = [...found].sort((a, b) => b.length - a.length);
  }

  mask(text: string): string {
    let out = text;
    for (const secret of this.secrets) if (out.includes(secret)) out = out.split(secret).join('***');
    return out;
  }

  info(message: string, fields: HookLogFields = {}): void {
    this.write('INFO', message, fields);
  }

  warn(message: string, fields: HookLogFields = {}): void {
    this.write('WARNING', message, fields);
  }

  error(message: string, fields: HookLogFields = {}): void {
    this.write('ERROR', message, fields);
  }

  /** Every line written so far, as the hook's stderr would hold them. */
  text(): string {
    return this.lines.join('');
  }

  private write(level: HookLogLevel, message: string, fields: HookLogFields): void {
    const masked: Record<string, unknown> = {};
    let line = `[${pythonLogTime(this.now())}] (${this.name}) [${level}] ${this.mask(message)}`;
    for (const [key, value] of Object.entries(fields)) {
      const text = this.mask(typeof value === 'string' ? value : inputText(value));
      // A number or a boolean holds no secret and keeps its type in the agent's log (exitCode is a number there).
      masked[key] = typeof value === 'number' || typeof value === 'boolean' ? value : text;
      line += ` ${key}=${text}`;
    }
    line += '\n';
    this.lines.push(line);
    this.sink(level, this.mask(message), masked, line);
  }
}

/** Python logging's default time format (local time), as heat-config's hooks and heat-cfntools print it. */
export function pythonLogTime(d: Date): string {
  const p = (n: number, w = 2) => String(n).padStart(w, '0');
  return (
    `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())} ${p(d.getHours())}:${p(d.getMinutes())}:` +
    `${p(d.getSeconds())},${p(d.getMilliseconds(), 3)}`
  );
}

/**
 * The texts of a secret value that must never be shown: its text form, and for a list or an object also its compact
 * JSON and every string inside it, since a hook may print the structure in another JSON form or one part alone.
 */
function secretTexts(value: unknown): string[] {
  const texts = [inputText(value)];
  if (value !== null && typeof value === 'object') {
    texts.push(JSON.stringify(value));
    const visit = (v: unknown): void => {
      if (typeof v === 'string') texts.push(v);
      else if (Array.isArray(v)) v.forEach(visit);
      else if (v !== null && typeof v === 'object') Object.values(v).forEach(visit);
    };
    visit(value);
  }
  return texts.filter((t) => t !== '');
}
