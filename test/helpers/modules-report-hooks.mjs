// Module hooks of modules-report-preload.mjs: each resolved file: URL, appended to the report as it is resolved.
import { appendFileSync } from 'node:fs';

let report;

export function initialize(data) {
  report = data.file;
}

export async function resolve(specifier, context, nextResolve) {
  const resolved = await nextResolve(specifier, context);
  if (report && resolved.url.startsWith('file:')) appendFileSync(report, `${resolved.url}\n`);
  return resolved;
}
