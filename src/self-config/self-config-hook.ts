import { promises as fs } from 'node:fs';
import path from 'node:path';
import type { AfterCollectHook } from '../pipeline/contract.js';
import { parseOsloIni } from '../config/oslo-ini.js';
import { errorMessage } from '../errors.js';
import { setSecrets } from '../log/redact.js';
import { readFileIfExists, writeFileAtomic } from '../util/atomic-write.js';
import { isJsonObject, type JsonObject } from '../util/json-merge.js';
import { mergedAgentSection, renderAgentConfig, TRANSPORT_SECTIONS } from './render-config.js';

// Self-configuration in the same cycle: when collected metadata carries Heat's `os-collect-config` key, the agent's
// config file ([agent] config_target) is rewritten from it and the agent reloads and collects again at once, so a
// cold boot where only heat_local has data reaches the real transport (cfn, heat, request, zaqar) in its first cycle.
// Upstream needed a command run (os-apply-config rendering the file) and a re-exec for this (the "two-loop" bootstrap).
// The file is written only when its content changes (atomic, 0600: it holds credentials), so a steady state costs
// one read and no reload.

const FILE_MODE = 0o600;
const SECRET_KEYS = ['password', 'secret_access_key'];

export const selfConfigHook: AfterCollectHook = async (outcome, ctx) => {
  const { config, paths, files } = ctx.loaded;
  const target = config.agent.config_target;
  const log = ctx.log.child({ component: 'self-config' });
  if (!target) return { reload: false };
  const section = mergedAgentSection(outcome.pairs);
  if (!section) return { reload: false };
  registerSecrets(section);

  try {
    const current = await readFileIfExists(target);
    const existing = current === undefined ? undefined : parseOsloIni(current);
    if (existing && existing.problems.length > 0) {
      log.warn(
        { file: paths.unmap(target), problems: existing.problems.length },
        'existing config file has unreadable lines; they are dropped on rewrite',
      );
    }
    const text = renderAgentConfig(section, existing?.doc, (fields, message) => log.warn(fields, message));
    if (text === current) {
      await tightenMode(target);
      return { reload: false };
    }
    await writeFileAtomic(target, text, { mode: FILE_MODE, mkdirMode: 0o755 });
    const collectors = Array.isArray(section.collectors)
      ? section.collectors.filter((c) => typeof c === 'string')
      : undefined;
    log.info(
      { file: paths.unmap(target), collectors },
      'agent configuration rewritten from os-collect-config metadata; reloading',
    );
    // A target in the configuration directory of a file it reads (/etc/os-collect-config.conf.d/00-heat.conf) is read
    // from the reload on, even when it did not exist before.
    const readDir = files.some((f) => path.dirname(target) === `${f}.d`);
    if (files.length > 0 && !files.includes(target) && !readDir) {
      log.warn(
        { file: paths.unmap(target), reads: files.map((f) => paths.unmap(f)) },
        'config_target is not among the config files this agent reads; the new settings apply only where it is read',
      );
    }
    return { reload: true };
  } catch (err) {
    log.error(
      { file: paths.unmap(target), reason: errorMessage(err) },
      'could not write the agent configuration from os-collect-config metadata; keeping the current one',
    );
    return { reload: false };
  }
};

/**
 * Credentials in the metadata are scrubbed from every later log line, like those read from config files. The
 * metadata's current credentials replace the ones it carried before (the configuration written from them is loaded,
 * and so registered, in its own right).
 */
function registerSecrets(section: JsonObject): void {
  const values: string[] = [];
  for (const name of TRANSPORT_SECTIONS) {
    const value = section[name];
    if (!isJsonObject(value)) continue;
    for (const key of SECRET_KEYS) {
      const secret = value[key];
      if (typeof secret === 'string') values.push(secret);
    }
  }
  setSecrets('self-config', values);
}

/** An unchanged file that someone made readable is put back to 0600 (it holds credentials). */
async function tightenMode(file: string): Promise<void> {
  const st = await fs.stat(file);
  if ((st.mode & 0o777) !== FILE_MODE) await fs.chmod(file, FILE_MODE);
}
