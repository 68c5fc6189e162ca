// Process entry of heat-cfntools' commands but cfn-signal (cfn-init, cfn-hup, cfn-get-metadata, cfn-push-stats,
// cfn-create-aws-symlinks): the file that their launchers and links start (dist/cfn-commands.cjs), beside the agent's
// entry (src/bin.ts). Templates run cfn-init on every boot and cfn-hup from cron every few minutes, so their start-up
// is what users wait for.
//
// Built as CommonJS, with the commands' code in one more CommonJS file beside it (dist/chunks/cfn-main.cjs, from
// src/cli/cfn-main.ts; scripts/build.mjs). On Node.js 20 the same code started as ES modules took ~15 ms longer in a
// cfn-init run of ~140 ms: the ES module loader's own start, and the module view that an `import` of each builtin
// (node:fs, node:http, ...) builds by reading every export (docs/performance.md).
import { createRequire } from 'node:module';
import { isCfnTool, programNameFrom } from './cli/command-names.js';
import { keepStdioBlocking } from './cli/stdio-blocking.js';
import { requireWithCodeCache } from './launch/code-cache.js';
import { cacheDirectory } from './launch/compile-cache.js';

const name = programNameFrom(process.argv[1]);
if (isCfnTool(name)) {
  // V8's code cache of the commands' file, on every Node.js (code-cache.ts says why not Node's own compile cache).
  const codeCache = cacheDirectory();
  keepStdioBlocking();
  // require(), where import() would start the ES module loader that this file is built to do without.
  const requireBeside = createRequire(import.meta.url);
  const file = requireBeside.resolve('./chunks/cfn-main.cjs');
  const { cfnMain } = (
    codeCache === undefined ? requireBeside(file) : requireWithCodeCache(file, codeCache)
  ) as typeof import('./cli/cfn-main.js');
  void cfnMain(process.argv.slice(2), name).then((code) => {
    process.exitCode = code;
  });
} else {
  // Started by another name (`node cfn-commands.cjs`, a link named otherwise): the agent's entry answers every name.
  void import('./bin.js');
}
