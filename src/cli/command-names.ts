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

/** heat-cfntools' commands: argparse's flags, taken as given (no oslo spellings), and what /opt/aws/bin links to. */
export function isCfnCommand(name: string): boolean {
  return name.startsWith('cfn-');
}

export const COMMAND_NAMES = [AGENT_COMMAND, ...COMPAT_COMMANDS] as const;

export type CommandName = (typeof COMMAND_NAMES)[number];

export function isCommandName(name: string): name is CommandName {
  return (COMMAND_NAMES as readonly string[]).includes(name);
}
