import { mkdirSync, openSync, writeSync } from 'node:fs';
import path from 'node:path';
import { errorMessage } from '../errors.js';
import { scrubText } from '../log/redact.js';
import { HookLog, pythonLogTime, type HookLogLevel } from '../hooks/kit/hook-log.js';

// The log of a heat-cfntools command: heat-cfntools' file (/var/log/cfn-init.log, cfn-get-metadata.log, cfn-hup.log,
// under --root) in its line format, "LEVEL [YYYY-MM-DD HH:MM:SS,mmm] message", with the fields after the message.
// Created 0600 (heat-cfntools' were world-readable, and metadata can hold credentials); every line is scrubbed of the
// registered secrets. Warnings and errors also go to stderr, so a user-data script's output shows why a command
// failed; -v sends every line there.

export interface CfnLogOptions {
  /** The log file as this process reaches it. */
  readonly file: string;
  /** Every line to stderr too (-v), not only warnings and errors. */
  readonly verbose?: boolean;
  readonly stderr?: (line: string) => void;
}

const STDERR_LEVELS: ReadonlySet<HookLogLevel> = new Set(['WARNING', 'ERROR']);

export function cfnLog(name: string, options: CfnLogOptions): HookLog {
  const toStderr = options.stderr ?? ((line: string) => process.stderr.write(line));
  let fd: number | undefined;
  let fileFailed = false;
  return new HookLog(name, (level, message, fields) => {
    const detail = Object.entries(fields)
      .map(([k, v]) => ` ${k}=${String(v)}`)
      .join('');
    const line = scrubText(`${level} [${pythonLogTime(new Date())}] ${message}${detail}\n`);
    if (!fileFailed) {
      try {
        // Opened on the first line and kept for the life of the command (closed by the process's end).
        if (fd === undefined) {
          mkdirSync(path.dirname(options.file), { recursive: true, mode: 0o755 });
          fd = openSync(options.file, 'a', 0o600);
        }
        writeSync(fd, line);
      } catch (err) {
        fileFailed = true;
        toStderr(`${name}: cannot write the log file ${options.file} (${errorMessage(err)}); logging to stderr\n`);
      }
    }
    if (options.verbose || fileFailed || STDERR_LEVELS.has(level)) toStderr(`${name}: ${line}`);
  });
}
