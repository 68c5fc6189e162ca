// Loaded into the agent with `node --import` by tests that check which of Node's builtin modules a command loaded:
// when the process exits, the builtins it loaded (process.moduleLoadList: "NativeModule tls", "Internal Binding
// crypto", ...) are written as a JSON array to the file named by OCA_BUILTINS_REPORT.
import { writeFileSync } from 'node:fs';

const file = process.env.OCA_BUILTINS_REPORT;
if (file) process.on('exit', () => writeFileSync(file, JSON.stringify(process.moduleLoadList)));
