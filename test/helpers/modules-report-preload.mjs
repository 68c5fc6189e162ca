// Loaded into the agent with `node --import` by tests that check which files of the bundle a command loaded: every ES
// module file Node resolves (file: URLs only) is appended, one URL per line, to the file named by OCA_MODULES_REPORT.
// The hooks run on Node's loader thread (module.register, Node.js >= 20.6).
import { register } from 'node:module';

const file = process.env.OCA_MODULES_REPORT;
if (file) register(new URL('./modules-report-hooks.mjs', import.meta.url), { data: { file } });
