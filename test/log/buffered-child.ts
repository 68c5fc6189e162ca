// Child process for test/log/logger.test.ts: a buffered stderr logger as os-apply-config builds it.
import { createLogger } from '../../src/log/logger.js';

const log = createLogger({ destination: 'stderr', buffered: true });
const mode = process.argv[2];
if (mode === 'exit') {
  for (let i = 0; i < 300; i++) log.info({ path: `/etc/app/file-${i}.conf` }, 'writing file');
  process.exit(3);
}
if (mode === 'flush-then-hang') {
  for (let i = 0; i < 5; i++) log.info({ i }, 'before the wait');
  log.flush();
  log.info('not flushed');
  process.stdout.write('waiting\n');
  setInterval(() => undefined, 1000);
}
