import { defineRefreshCompatCommand } from '../cli/refresh-command.js';
import { runCompatCommand } from '../cli/program.js';

// Entry of dist/os-refresh-config.cjs, run by dist/compat-launcher.cjs with its V8 code cache (src/launch/). Its own
// bundle, so that it loads the phase runner and nothing of the other commands.
void runCompatCommand('os-refresh-config', defineRefreshCompatCommand);
