// Child process for test/log/logger.test.ts: a buffered stderr logger as os-apply-config builds it, or (hold-*) an
// unbuffered one as the daemon's, held for a burst of lines.
import { createLogger, holdLogLines } from '../../src/log/logger.js';

const mode = process.argv[2];
const log = createLogger({ destination: 'stderr', buffered: !mode?.startsWith('hold-') });
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
if (mode === 'hold-then-hang' || mode === 'hold-release-then-hang') {
  const release = holdLogLines(log);
  for (let i = 0; i < 5; i++) log.info({ i }, 'held');
  if (mode === 'hold-release-then-hang') {
    release();
    log.info('after the release');
  }
  process.stdout.write('waiting\n');
  setInterval(() => undefined, 1000);
}
