// Loaded into the agent with `node --import` by tests that check which files of the bundle a command loaded: every
// file Node loads as a module (file: URLs only) is appended, one URL per line, to the file named by
// OCA_MODULES_REPORT. ES modules as they are resolved, by hooks that run on Node's loader thread (module.register,
// Node.js >= 20.6); CommonJS files, which those hooks do not see on Node.js 20, from require's cache as the process
// exits.
import { appendFileSync } from 'node:fs';
import { createRequire, register } from 'node:module';
import { pathToFileURL } from 'node:url';

const file = process.env.OCA_MODULES_REPORT;
if (file) {
  register(new URL('./modules-report-hooks.mjs', import.meta.url), { data: { file } });
  const cache = createRequire(import.meta.url).cache;
  process.on('exit', () => {
    const urls = Object.keys(cache).map((p) => pathToFileURL(p).href);
    if (urls.length > 0) appendFileSync(file, `${urls.join('\n')}\n`);
  });
}
