// Loaded into the agent with `node --import` by tests that check a command never makes an Intl.ListFormat, whose
// first one loads ICU's locale data (~15 ms of CPU): every one made is counted, and the count is written at exit to
// the file named by OCA_LIST_FORMAT_REPORT.
import { writeFileSync } from 'node:fs';

const file = process.env.OCA_LIST_FORMAT_REPORT;
if (file) {
  let made = 0;
  const Native = Intl.ListFormat;
  Intl.ListFormat = class extends Native {
    constructor(...args) {
      super(...args);
      made += 1;
    }
  };
  process.on('exit', () => writeFileSync(file, String(made)));
}
