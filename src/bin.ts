import { main, programNameFrom } from './cli/main.js';

// Process entry of the bundle. Restores the default SIGPIPE behaviour is not possible in Node; a closed stdout is
// handled by ending quietly instead.
process.stdout.on('error', (err: NodeJS.ErrnoException) => {
  if (err.code === 'EPIPE') process.exit(process.exitCode ?? 0);
});

const code = await main(process.argv.slice(2), programNameFrom(process.argv[1]));
process.exitCode = code;
