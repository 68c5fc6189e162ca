import path from 'node:path';

// The names one bundle answers to: the agent's own, and the commands of the Python tools it replaces (chosen by the
// name it was started as, src/cli/main.ts). The only list of them: the build writes it into dist/command-names (one
// per line) and dist/command-names.json, from which come the launchers in dist/bin, the image element's launchers and
// the Debian package's (docs/build.md). package.json's "bin" is checked against it by test/launch/command-names.test.ts.

export const AGENT_COMMAND = 'os-config-agent';

export const COMPAT_COMMANDS = [
  'os-collect-config',
  'os-apply-config',
  'os-refresh-config',
  'cfn-signal',
  'cfn-init',
  'cfn-get-metadata',
  'cfn-hup',
  'cfn-push-stats',
  'cfn-create-aws-symlinks',
] as const;

export const COMMAND_NAMES = [AGENT_COMMAND, ...COMPAT_COMMANDS] as const;

export type CommandName = (typeof COMMAND_NAMES)[number];

/** heat-cfntools' commands. */
export type CfnCommandName = Extract<CommandName, `cfn-${string}`>;

/** heat-cfntools' commands: argparse's flags, taken as given (no oslo spellings), and what /opt/aws/bin links to. */
export function isCfnCommand(name: string): name is CfnCommandName {
  return name.startsWith('cfn-') && isCommandName(name);
}

/** heat-cfntools' commands that fetch and apply metadata: all but cfn-signal, which is the agent's signal queue's. */
export type CfnToolName = Exclude<CfnCommandName, 'cfn-signal'>;

export function isCfnTool(name: string): name is CfnToolName {
  return isCfnCommand(name) && name !== 'cfn-signal';
}

export function isCommandName(name: string): name is CommandName {
  return (COMMAND_NAMES as readonly string[]).includes(name);
}

/** The command a process runs: the name it was started by (a link or launcher named after it), else the agent's. */
export function programNameFrom(argv1: string | undefined): CommandName {
  const base = path.basename(argv1 ?? '').replace(/\.(m?js|cjs)$/, '');
  return isCommandName(base) ? base : AGENT_COMMAND;
}
