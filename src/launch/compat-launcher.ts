import path from 'node:path';
import { runBundle, saveCodeCache } from './code-cache.js';

// dist/compat-launcher.cjs: what dist/bin/os-apply-config and dist/bin/os-refresh-config link to. Runs the bundle of
// the command it was started as (dist/os-apply-config.cjs or dist/os-refresh-config.cjs) with that bundle's code cache
// beside it (<bundle>.cache), and writes the cache at exit when it was missing or rejected. (CommonJS output: __dirname
// is the directory of the real file, whatever link started it; process.argv[1] is the link's path.)
const COMMANDS: readonly string[] = ['os-apply-config', 'os-refresh-config'];

const command = path.basename(process.argv[1] ?? '');
if (COMMANDS.includes(command)) {
  const bundle = path.join(__dirname, `${command}.cjs`);
  const cacheFile = `${bundle}.cache`;
  const run = runBundle(bundle, cacheFile);
  if (run.state !== 'accepted') process.once('exit', () => saveCodeCache(run, cacheFile));
} else {
  process.stderr.write(`compat-launcher: started as "${command}"; run it through a link named ${COMMANDS.join(' or ')}\n`);
  process.exitCode = 2;
}
