import type { Logger } from '../log/logger.js';

// SIGTERM/SIGINT abort the current cycle cleanly (the loop then exits 0); SIGHUP asks for a configuration reload.
// Upstream ignored SIGHUP after its first command run (B2); here it always works.
export function installSignalHandlers(log: Logger, onReload?: () => void): { signal: AbortSignal; dispose(): void } {
  const controller = new AbortController();
  const stop = (sig: NodeJS.Signals) => {
    if (controller.signal.aborted) return;
    log.info({ signal: sig }, 'shutting down');
    controller.abort();
  };
  const hup = () => {
    log.info({ signal: 'SIGHUP' }, 'reload requested');
    onReload?.();
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
  process.on('SIGHUP', hup);
  return {
    signal: controller.signal,
    dispose() {
      process.off('SIGTERM', stop);
      process.off('SIGINT', stop);
      process.off('SIGHUP', hup);
    },
  };
}
