import path from 'node:path';
import type { Command } from 'commander';
import { createAwsSymlinks, isOurs } from '../cfntools/aws-symlinks.js';
import { createPathMapper } from '../util/rooted-path.js';

// The two small heat-cfntools commands: `cfn-create-aws-symlinks`, which links the cfn-* commands into /opt/aws/bin
// (src/cfntools/aws-symlinks.ts), and `cfn-push-stats`, which has nothing left to report to.

export function defineCfnCreateAwsSymlinksCommand(cmd: Command, setExit: (code: number) => void): Command {
  cmd
    .option('-t, --target <dir>', 'Target directory to create symlinks', '/opt/aws/bin')
    .option(
      '-s, --source <dir>',
      "Source directory to create symlinks from (default: heat-cfntools' /usr/bin when it is installed, else ours)",
    )
    .option('-f, --force', 'If specified, will create symlinks even if there is already a target file')
    .option('--root <dir>', 'prefix every absolute path read or written with DIR (tests, image builds)');
  cmd.action(() => {
    const flags = cmd.opts<{ target: string; source?: string; force?: boolean; root?: string }>();
    setExit(
      createAwsSymlinks({
        paths: createPathMapper(flags.root),
        target: path.resolve(flags.target),
        source: flags.source === undefined ? undefined : path.resolve(flags.source),
        force: flags.force === true,
        ownDir: ownLauncherDir(process.argv[1]),
        say: (line) => process.stdout.write(`${line}\n`),
      }),
    );
  });
  return cmd;
}

/**
 * The directory of our launchers: bin/ beside the lib/ the command was started from (the image's and the package's
 * layout), or the command's own directory (dist/bin).
 */
function ownLauncherDir(started: string | undefined): string {
  const here = path.dirname(path.resolve(started ?? '.'));
  for (const dir of [path.join(here, '../bin'), here]) if (isOurs(path.join(dir, 'cfn-init'))) return path.resolve(dir);
  return here;
}

export const PUSH_STATS_GONE =
  "Heat removed the CloudWatch API (heat-api-cloudwatch, in its Queens release) that cfn-push-stats reported to: nothing was sent. Report metrics to your cloud's telemetry service instead (docs/cfntools.md#cfn-push-stats).";

/** heat-cfntools' flags, accepted so a template's call gets the line above rather than a usage error. */
const PUSH_STATS_FLAGS = [
  '-v, --verbose',
  '--credential-file <file>',
  '--service-failure',
  '--mem-util',
  '--mem-used',
  '--mem-avail',
  '--swap-util',
  '--swap-used',
  '--disk-space-util',
  '--disk-space-used',
  '--disk-space-avail',
  '--memory-units <units>',
  '--disk-units <units>',
  '--disk-path <path>',
  '--cpu-util',
  '--haproxy',
  '--haproxy-latency',
  '--heartbeat',
  '--watch <name>',
  '--metric <name>',
  '--units <units>',
  '--value <value>',
];

export function defineCfnPushStatsCommand(cmd: Command, setExit: (code: number) => void): Command {
  for (const flags of PUSH_STATS_FLAGS) cmd.option(flags, "heat-cfntools' flag (accepted; nothing is sent)");
  cmd.action(() => {
    process.stderr.write(`cfn-push-stats: ${PUSH_STATS_GONE}\n`);
    setExit(1);
  });
  return cmd;
}
