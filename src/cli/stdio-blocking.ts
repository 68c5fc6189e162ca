// Our processes leave their stdout and stderr in blocking mode, as they received them (systemd hands over journald's
// socket, a shell a pipe or a file).
//
// Node switches a pipe or socket to non-blocking mode when it creates process.stdout or process.stderr for it, and
// creates them lazily: on first use, and stderr also whenever any socket or child-process pipe is destroyed (Node's
// own socket teardown compares with process.stderr). That mode belongs to the open file description, shared with
// every process that inherited the descriptor: the daemon's phase scripts and hooks and, under systemd, every writer
// of the same journald stream. Synchronous writes to a non-blocking descriptor fail with EAGAIN whenever the reader
// lags; Python raises BlockingIOError, and a phase script fails. So as soon as Node creates either stream, it is put
// back in blocking mode (libuv's uv_stream_set_blocking, which Node itself applies to terminals).

type StdioName = 'stdout' | 'stderr';

interface BlockableHandle {
  setBlocking?(blocking: boolean): number;
}

/** Wrap Node's lazy process.stdout and process.stderr so that each is made blocking when it is first created. */
export function keepStdioBlocking(): void {
  for (const name of ['stdout', 'stderr'] as StdioName[]) {
    const descriptor = Object.getOwnPropertyDescriptor(process, name);
    // Already replaced, or not Node's lazy getter: leave it alone.
    if (!descriptor?.get || !descriptor.configurable) continue;
    const create = descriptor.get;
    Object.defineProperty(process, name, {
      configurable: true,
      enumerable: descriptor.enumerable ?? true,
      get() {
        const stream = create.call(process) as NodeJS.WriteStream;
        Object.defineProperty(process, name, {
          configurable: true,
          enumerable: descriptor.enumerable ?? true,
          value: stream,
        });
        makeBlocking(stream);
        return stream;
      },
    });
  }
}

function makeBlocking(stream: NodeJS.WriteStream): void {
  // Pipes, sockets and terminals have a libuv handle; files and closed descriptors have none and need nothing.
  const handle = (stream as unknown as { _handle?: BlockableHandle })._handle;
  handle?.setBlocking?.(true);
}
