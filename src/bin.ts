// Process entry of the bundle: every command name starts here (src/cli/command-names.ts). It stays small and loads
// the rest with import(), so that Node's compile cache, turned on first, covers all of the agent's code.
//
// V8 flags are given on node's command line by whoever starts the process, never set here: --v8-pool-size=0 by every
// launcher, --lite-mode by the unit and the os-config-agent launchers for the daemon (docs/build.md).
import { enableCompileCache } from './launch/compile-cache.js';

enableCompileCache();
const { keepStdioBlocking } = await import('./cli/stdio-blocking.js');
keepStdioBlocking();
const { isCfnTool, programNameFrom } = await import('./cli/command-names.js');
const name = programNameFrom(process.argv[1]);
const args = process.argv.slice(2);
// heat-cfntools' commands but cfn-signal come from a file of their own (src/cli/cfn-main.ts says why).
process.exitCode = isCfnTool(name)
  ? await (await import('./cli/cfn-main.js')).cfnMain(args, name)
  : await (await import('./cli/main.js')).main(args, name);
