import { readFileSync } from 'node:fs';
import { AgentError, errorMessage } from '../errors.js';
import type { Logger } from '../log/logger.js';
import { WriteBatch } from '../util/write-batch.js';
import { TemplateError } from './apply-errors.js';
import { readControlFile } from './control-file.js';
import { runExecutableTemplate } from './executable-template.js';
import { renderTemplate } from './render-template.js';
import { discoverTemplates } from './template-tree.js';
import { newPathCheckCache, resolveOutputPath, writeRendered, type RenderedFile, type WriteOutcome } from './write-rendered.js';

// The os-apply-config run: render every template and validate every control file and output path first, then stage
// every changed file as a temp file, and only then rename them all into place (one WriteBatch): a bad template or
// control file, or a write that fails (full disk), leaves every output as it was. Missing keys render empty with one
// warning per key (fatal in strict mode).

export interface ApplyOptions {
  templatesDir: string;
  outputDir: string;
  metadata: Record<string, unknown>;
  strict: boolean;
  log: Logger;
  /** Render and check everything but write nothing (os-apply-config --validate). */
  validate?: boolean;
}

export interface ApplyResult {
  written: string[];
  unchanged: string[];
  /** Targets removed because they rendered empty with allow_empty: false. */
  deleted: string[];
}

// Templates are independent: rendering, checks and writes run a few at a time, so a large tree is not paced by one
// filesystem round trip after another. Results and log lines keep the tree order.
const CONCURRENCY = 16;

export async function applyTemplates(opts: ApplyOptions): Promise<ApplyResult> {
  const { log } = opts;
  const entries = await discoverTemplates(opts.templatesDir);
  const pathCache = newPathCheckCache();
  const planned = await mapLimit(entries, CONCURRENCY, async (entry) => {
    const body = await renderOne(entry.source, entry.executable, opts.metadata);
    const control = await readControlFile(entry.control);
    const target = await resolveOutputPath(opts.outputDir, entry.relative, pathCache);
    return { entry, missing: body.missing, file: { target, body: body.text, control } satisfies RenderedFile };
  });
  const missingInStrict: string[] = [];
  for (const { entry, missing, file } of planned) {
    for (const key of missing) {
      log.warn({ template: entry.source, key }, 'template names a key missing from the metadata');
      missingInStrict.push(`${entry.relative}: ${key}`);
    }
    if (file.control.mode === 0) log.warn({ template: entry.source }, 'mode 0 in the control file is ignored');
  }
  if (opts.strict && missingInStrict.length > 0) {
    throw new TemplateError(`strict mode: templates name keys missing from the metadata (${missingInStrict.slice(0, 20).join(', ')}${missingInStrict.length > 20 ? ', ...' : ''}); nothing was written`);
  }
  const result: ApplyResult = { written: [], unchanged: [], deleted: [] };
  if (opts.validate) {
    log.info({ templates: planned.length }, 'templates validated; nothing written');
    return result;
  }
  const madeDirs = new Set<string>();
  const batch = new WriteBatch();
  let outcomes: WriteOutcome[];
  try {
    outcomes = await mapLimit(planned, CONCURRENCY, ({ file }) => writeRendered(file, opts.outputDir, log, batch, madeDirs));
    const flushed = await batch.commit();
    log.debug({ files: flushed.files, directories: flushed.directories }, 'rendered files flushed to disk');
  } catch (err) {
    batch.abort();
    throw new TemplateError(`could not write the rendered files under ${opts.outputDir} (${errorMessage(err)}); no file was replaced`, { cause: err });
  }
  outcomes.forEach((outcome, i) => {
    const target = (planned[i] as (typeof planned)[number]).file.target;
    if (outcome === 'written') result.written.push(target);
    else if (outcome === 'unchanged') result.unchanged.push(target);
    else if (outcome === 'deleted') result.deleted.push(target);
  });
  log.info({ written: result.written.length, unchanged: result.unchanged.length, deleted: result.deleted.length }, 'templates applied');
  return result;
}

/**
 * Map with at most `limit` calls in flight, results in input order. After a failure no new call starts; the error of
 * the lowest failing index is thrown (every lower index had started, so the choice does not depend on timing).
 */
async function mapLimit<T, R>(items: readonly T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = new Array<R>(items.length);
  let next = 0;
  const failures: Array<{ index: number; err: unknown }> = [];
  const worker = async () => {
    while (failures.length === 0 && next < items.length) {
      const i = next++;
      try {
        results[i] = await fn(items[i] as T);
      } catch (err) {
        failures.push({ index: i, err });
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  if (failures.length > 0) throw failures.reduce((a, b) => (b.index < a.index ? b : a)).err;
  return results;
}

const UTF8 = new TextDecoder('utf-8', { fatal: true });

async function renderOne(source: string, executable: boolean, metadata: Record<string, unknown>): Promise<{ text: string; missing: string[] }> {
  if (executable) return { text: await runExecutableTemplate(source, metadata), missing: [] };
  let text: string;
  try {
    // Templates are small: a synchronous read costs less than a thread-pool round trip.
    text = UTF8.decode(readFileSync(source));
  } catch (err) {
    const why = err instanceof TypeError ? 'not valid UTF-8' : ((err as NodeJS.ErrnoException).code ?? String(err));
    throw new TemplateError(`could not read template ${source} (${why})`, { cause: err });
  }
  try {
    // Python reads templates with universal newlines: CRLF and lone CR become LF.
    return renderTemplate(text.replace(/\r\n?/g, '\n'), metadata);
  } catch (err) {
    if (err instanceof AgentError) throw new TemplateError(`could not render moustache template ${source}: ${err.message}`, { cause: err });
    throw err;
  }
}
