import { AgentError, errorMessage } from '../errors.js';
import { holdLogLines, type Logger } from '../log/logger.js';
import { WriteBatch } from '../util/write-batch.js';
import { TemplateError } from './apply-errors.js';
import { DEFAULT_CONTROL, readControlFile } from './control-file.js';
import { runExecutableTemplate } from './executable-template.js';
import { renderTemplate } from './render-template.js';
import { readTemplateSource } from './template-source.js';
import { discoverTemplates, type TemplateEntry } from './template-tree.js';
import { newPathCheckCache, resolveOutputPath, writeRendered, type WriteOutcome } from './write-rendered.js';

// The os-apply-config run: each template is rendered, its control file and output path checked, and its new body
// staged as a temp file beside the target (one WriteBatch); only when every template has rendered and every body is
// written are they renamed into place. A bad template or control file, a missing key in strict mode, or a write that
// fails (full disk) leaves every output as it was: the batch removes its temp files and the directories it made.
// Missing keys render empty with one warning per key (fatal in strict mode).
//
// One template after another, synchronously: each step is a cheap system call or a little JavaScript, and the thread
// pool's round trips would cost more than they save. Writing each body as soon as it is rendered lets it be collected
// young instead of holding every body to the end. Only config scripts and control files (YAML, account lookups) are
// awaited.

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
  // A line per file: written in blocks of lines while the run lasts (one system call per line would cost more than
  // the render in a daemon whose journald reads every one).
  const release = holdLogLines(opts.log);
  try {
    return await applyTree(opts);
  } finally {
    release();
  }
}

async function applyTree(opts: ApplyOptions): Promise<ApplyResult> {
  const { log } = opts;
  const entries = await discoverTemplates(opts.templatesDir);
  const batch = new WriteBatch();
  let staged: StagedFile[];
  try {
    staged = await stageAll(entries, opts, batch);
    if (opts.validate) {
      log.info({ templates: entries.length }, 'templates validated; nothing written');
      return { written: [], unchanged: [], deleted: [] };
    }
    for (const { target, outcome } of staged) {
      if (outcome === 'written') log.info({ path: target }, 'writing file');
      else if (outcome === 'deleted')
        log.info({ path: target }, 'deleting file: empty rendering and allow_empty is false');
      else if (outcome === 'skipped') log.info({ path: target }, 'not creating empty file: allow_empty is false');
    }
    // The lines so far reach the log before the wait for the disk (a buffered logger holds them otherwise).
    log.flush();
    const flushed = await batch.commit().catch((err: unknown) => {
      throw writeFailure(err, opts.outputDir);
    });
    log.debug({ files: flushed.files, directories: flushed.directories }, 'rendered files flushed to disk');
  } catch (err) {
    batch.abort();
    throw err;
  }
  const result: ApplyResult = { written: [], unchanged: [], deleted: [] };
  for (const { target, outcome } of staged) {
    if (outcome === 'written') result.written.push(target);
    else if (outcome === 'unchanged') result.unchanged.push(target);
    else if (outcome === 'deleted') result.deleted.push(target);
  }
  log.info(
    { written: result.written.length, unchanged: result.unchanged.length, deleted: result.deleted.length },
    'templates applied',
  );
  return result;
}

interface StagedFile {
  readonly target: string;
  readonly outcome: WriteOutcome;
}

/** Every template rendered, checked and (unless validating) staged in `batch`; nothing is renamed yet. */
async function stageAll(
  entries: readonly TemplateEntry[],
  opts: ApplyOptions,
  batch: WriteBatch,
): Promise<StagedFile[]> {
  const { log } = opts;
  const pathCache = newPathCheckCache();
  const staged: StagedFile[] = [];
  const missingInStrict: string[] = [];
  for (const entry of entries) {
    const rendered = renderOne(entry, opts.metadata, log);
    const { text, missing } = rendered instanceof Promise ? { text: await rendered, missing: [] } : rendered;
    const control = entry.control === undefined ? DEFAULT_CONTROL : await readControlFile(entry.control);
    const output = resolveOutputPath(opts.outputDir, entry.relative, pathCache);
    for (const key of missing) {
      log.warn({ template: entry.source, key }, 'template names a key missing from the metadata');
      missingInStrict.push(`${entry.relative}: ${key}`);
    }
    if (control.mode === 0) log.warn({ template: entry.source }, 'mode 0 in the control file is ignored');
    if (opts.validate) continue;
    let outcome: WriteOutcome;
    try {
      outcome = writeRendered({ ...output, body: text, control }, opts.outputDir, batch);
    } catch (err) {
      throw writeFailure(err, opts.outputDir);
    }
    staged.push({ target: output.target, outcome });
  }
  if (opts.strict && missingInStrict.length > 0) {
    throw new TemplateError(
      `strict mode: templates name keys missing from the metadata (${missingInStrict.slice(0, 20).join(', ')}${missingInStrict.length > 20 ? ', ...' : ''}); nothing was written`,
    );
  }
  return staged;
}

/** A failed write under the output root (full disk, permissions), as the operator reads it. */
function writeFailure(err: unknown, outputDir: string): TemplateError {
  return new TemplateError(
    `could not write the rendered files under ${outputDir} (${errorMessage(err)}); no file was replaced`,
    { cause: err },
  );
}

/** The rendered text and its missing keys, or (a config script) the promise of its output. */
function renderOne(
  entry: TemplateEntry,
  metadata: Record<string, unknown>,
  log: Logger,
): { text: string; missing: string[] } | Promise<string> {
  const source = readTemplateSource(entry.source);
  if (source.executable) {
    log.flush();
    return runExecutableTemplate(entry.source, metadata);
  }
  try {
    return renderTemplate(source.text, metadata);
  } catch (err) {
    if (err instanceof AgentError)
      throw new TemplateError(`could not render moustache template ${entry.source}: ${err.message}`, { cause: err });
    throw err;
  }
}
