import path from 'node:path';
import { runBundle, saveCodeCache } from './code-cache.js';

// dist/compat-launcher.cjs: what dist/bin/os-apply-config and dist/bin/os-refresh-config link to. Runs dist/compat.cjs
// with its code cache (dist/compat.cjs.cache), and writes the cache at exit when it was missing or rejected.
// (CommonJS output: __dirname is the directory of the real file, whatever link started it.)
const bundle = path.join(__dirname, 'compat.cjs');
const cacheFile = `${bundle}.cache`;
const run = runBundle(bundle, cacheFile);
if (run.state !== 'accepted') process.once('exit', () => saveCodeCache(run, cacheFile));
