import { Option, type Command } from 'commander';
import { COMMON_HEADING } from './command-context.js';

// --root, --config-file and --config-dir as the heat-cfntools commands and cfn-signal take them, under the common
// heading. Nothing here loads more than commander, so those one-shot commands start without the logger.

/** A flag's parser that gathers every value of a repeated flag, in order. */
export function collectRepeated(value: string, previous: string[] | undefined): string[] {
  return [...(previous ?? []), value];
}

export function addRootConfigFlags(cmd: Command): Command {
  return cmd
    .addOption(
      new Option('--root <dir>', 'prefix every absolute path read or written with DIR (tests, image builds)').helpGroup(
        COMMON_HEADING,
      ),
    )
    .addOption(
      new Option('--config-file <file>', "the agent's configuration file (repeat for more)")
        .argParser(collectRepeated)
        .helpGroup(COMMON_HEADING),
    )
    .addOption(
      new Option('--config-dir <dir>', 'directory of *.conf files read after the config files (repeat for more)')
        .argParser(collectRepeated)
        .helpGroup(COMMON_HEADING),
    );
}
