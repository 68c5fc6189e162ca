import type { Command } from 'commander';

// What a command's help says after its flags (its exit status), kept where the manual page finds it too: commander
// keeps help text only as output events.

const EXIT_STATUS = new WeakMap<Command, readonly string[]>();

/** `lines` (each under 80 columns) after the help of `cmd`, and as the EXIT STATUS of its manual page. */
export function addExitStatus(cmd: Command, lines: readonly string[]): Command {
  EXIT_STATUS.set(cmd, lines);
  return cmd.addHelpText('after', ['', ...lines].join('\n'));
}

export function exitStatusOf(cmd: Command): readonly string[] | undefined {
  return EXIT_STATUS.get(cmd);
}
