import { main, programNameFrom } from './cli/main.js';
import { keepStdioBlocking } from './cli/stdio-blocking.js';

// Entry of dist/compat.cjs, the bundle of the short-lived compatibility commands os-apply-config and
// os-refresh-config: CommonJS, so that dist/compat-launcher.cjs can run it with a V8 code cache (src/launch/). The
// command is the name the process was started by, as for the main bundle.
keepStdioBlocking();
void main(process.argv.slice(2), programNameFrom(process.argv[1])).then((code) => {
  process.exitCode = code;
});
