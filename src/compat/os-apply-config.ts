import { defineOsApplyConfigCommand } from '../cli/apply-command.js';
import { runCompatCommand } from '../cli/program.js';

// Entry of dist/os-apply-config.cjs, run by dist/compat-launcher.cjs with its V8 code cache (src/launch/). Its own
// bundle: a phase script's os-apply-config loads and deserialises the apply code only, not every other command's.
void runCompatCommand('os-apply-config', defineOsApplyConfigCommand);
