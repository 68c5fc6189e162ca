import { AgentError, errorMessage } from '../errors.js';
import type { Logger } from '../log/logger.js';
import { WriteBatch } from '../util/write-batch.js';
import { TemplateError } from './apply-errors.js';
import { DEFAULT_CONTROL, readControlFile } from './control-file.js';
import { runExecutableTemplate } from './executable-template.js';
import { renderTemplate } from './render-template.js';
import { readTemplateSource } from './template-source.js';
import { discoverTemplates, type TemplateEntry } from './template-tree.js';
import { newPathCheckCache, resolveOutputPath, writeRendered, type RenderedFile, type WriteOutcome } from './write-rendered.js';

// The os-apply-config run: render every template and validate every control file and output path first, then stage
// every changed file as a temp file, and only then rename them all into place (one WriteBatch): a bad template or
// control file, or a write that fails (full disk), leaves every output as it was, without so much as a new directory.
// Missing keys render empty with one warning per key (fatal in strict mode).
//
// One template after another, synchronously: each step is a cheap system call or a little JavaScript, and the thread
// pool's round trips would cost more than they save. Only config scripts and control files (YAML, account lookups)
// are awaited.

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

export async function applyTemplates(opts: ApplyOptions): Promise<ApplyResult> {
  const { log } = opts;
  const entries = await discoverTemplates(opts.templatesDir);
  const pathCache = newPathCheckCache();
  const planned: RenderedFile[] = [];
  const missingInStrict: string[] = [];
  for (const entry of entries) {
    const rendered = renderOne(entry, opts.metadata, log);
    const { text, missing } = rendered instanceof Promise ? { text: await rendered, missing: [] } : rendered;
    const control = entry.control === undefined ? DEFAULT_CONTROL : await readControlFile(entry.control);
    planned.push({ ...resolveOutputPath(opts.outputDir, entry.relative, pathCache), body: text, control });
    for (const key of missing) {
      log.warn({ template: entry.source, key }, 'template names a key missing from the metadata');
      missingInStrict.push(`${entry.relative}: ${key}`);
    }
    if (control.mode === 0) log.warn({ template: entry.source }, 'mode 0 in the control file is ignored');
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
  const outcomes: WriteOutcome[] = [];
  try {
    for (const file of planned) outcomes.push(writeRendered(file, opts.outputDir, log, batch, madeDirs));
    // The lines so far reach the log before the wait for the disk (a buffered logger holds them otherwise).
    log.flush();
    const flushed = await batch.commit();
    log.debug({ files: flushed.files, directories: flushed.directories }, 'rendered files flushed to disk');
  } catch (err) {
    batch.abort();
    throw new TemplateError(`could not write the rendered files under ${opts.outputDir} (${errorMessage(err)}); no file was replaced`, { cause: err });
  }
  outcomes.forEach((outcome, i) => {
    const target = (planned[i] as RenderedFile).target;
    if (outcome === 'written') result.written.push(target);
    else if (outcome === 'unchanged') result.unchanged.push(target);
    else if (outcome === 'deleted') result.deleted.push(target);
  });
  log.info({ written: result.written.length, unchanged: result.unchanged.length, deleted: result.deleted.length }, 'templates applied');
  return result;
}

/** The rendered text and its missing keys, or (a config script) the promise of its output. */
function renderOne(entry: TemplateEntry, metadata: Record<string, unknown>, log: Logger): { text: string; missing: string[] } | Promise<string> {
  const source = readTemplateSource(entry.source);
  if (source.executable) {
    log.flush();
    return runExecutableTemplate(entry.source, metadata);
  }
  try {
    return renderTemplate(source.text, metadata);
  } catch (err) {
    if (err instanceof AgentError) throw new TemplateError(`could not render moustache template ${entry.source}: ${err.message}`, { cause: err });
    throw err;
  }
}
