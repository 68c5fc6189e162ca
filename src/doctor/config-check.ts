import type { LoadedConfig } from '../config/load.js';
import { fail, ok, warn, type CheckResult } from './check.js';

// The configuration problems the loader collected (unknown options, bad values, unreadable files): an error is a
// failed check (the option fell back to its default, which is rarely what was meant), a warning a warning.

export function configCheck(loaded: LoadedConfig): CheckResult {
  const problems = loaded.problems;
  if (problems.length === 0) {
    const files = loaded.files.map((f) => loaded.paths.unmap(f));
    return ok(
      'config',
      files.length > 0 ? `read ${files.join(', ')} without problems` : 'no config file found; built-in defaults in use',
    );
  }
  const where = (p: (typeof problems)[number]) =>
    [
      p.file ? loaded.paths.unmap(p.file) : undefined,
      p.line !== undefined ? `line ${p.line}` : undefined,
      p.section && p.option ? `[${p.section}] ${p.option}` : p.option,
    ]
      .filter(Boolean)
      .join(' ');
  const text = problems.map((p) => `${where(p)}${where(p) ? ': ' : ''}${p.message}`).join('; ');
  const count = `${problems.length} configuration problem${problems.length === 1 ? '' : 's'}: ${text}`;
  const fix =
    'correct or remove the options named; `os-config-agent run --one-time --debug` logs each with its file and line';
  return problems.some((p) => p.severity === 'error') ? fail('config', count, fix) : warn('config', count, fix);
}
