// Process entry of the bundle.
//
// The long-running daemon spends its life waiting on timers and sockets, so it trades JIT speed for memory: V8's
// lite mode (no optimising compiler, lazy feedback) keeps its resident size about 4 MB lower on thousands of
// servers. Set before any agent code is compiled; OS_CONFIG_AGENT_FULL_JIT=1 turns it off.
const args = process.argv.slice(2);
if (args[0] === 'run' && !args.includes('--one-time') && process.env.OS_CONFIG_AGENT_FULL_JIT !== '1') {
  (await import('node:v8')).default.setFlagsFromString('--lite-mode');
}

const { keepStdioBlocking } = await import('./cli/stdio-blocking.js');
keepStdioBlocking();
const { main, programNameFrom } = await import('./cli/main.js');
process.exitCode = await main(args, programNameFrom(process.argv[1]));
