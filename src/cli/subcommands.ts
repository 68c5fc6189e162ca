import type { Command } from 'commander';
import type { CommandContext } from './command-context.js';

// The subcommands of `os-config-agent`, in the order its help lists them. Each module is loaded only when its command
// is the one run (or help, the manual pages or the completion list them all): the daemon then never parses the apply,
// refresh, deploy or status code (nor the YAML parser), which keeps its resident size down on every server.

export type DefineCommand = (cmd: Command, ctx: CommandContext) => unknown;

export interface Subcommand {
  readonly name: string;
  readonly description: string;
  load(): Promise<DefineCommand>;
}

export const SUBCOMMANDS: readonly Subcommand[] = [
  {
    name: 'run',
    description: 'the daemon: collect, apply, deploy, signal; loops unless --one-time',
    load: async () => (await import('./run-command.js')).defineRunCommand,
  },
  {
    name: 'status',
    description:
      'the agent, its sources, every deployment and undelivered signals (or one deployment); --wait until done',
    load: async () => (await import('./status-command.js')).defineStatusCommand,
  },
  {
    name: 'doctor',
    description: 'check the configuration, endpoints, credentials, clock, hooks and disk; exit 1 when a check fails',
    load: async () => (await import('./doctor-command.js')).defineDoctorCommand,
  },
  {
    name: 'collect-logs',
    description:
      'write one tarball for a support request: status, doctor, journal, configuration, records, secrets removed',
    load: async () => (await import('./collect-logs-command.js')).defineCollectLogsCommand,
  },
  {
    name: 'collect',
    description: 'collect metadata; print it, or run the configured command on change',
    load: async () => (await import('./collect-command.js')).defineCollectSubcommand,
  },
  {
    name: 'apply',
    description: 'render the os-apply-config templates from the cached metadata',
    load: async () => (await import('./apply-command.js')).defineApplyCommand,
  },
  {
    name: 'refresh',
    description:
      'run the os-refresh-config phase directories once (pre-configure, configure, post-configure, migration)',
    load: async () => (await import('./refresh-command.js')).defineRefreshCommand,
  },
  {
    name: 'deploy',
    description: 'run pending deployments from the cached metadata (or --heat-config FILE) and signal them',
    load: async () => (await import('./deploy-command.js')).defineDeployCommand,
  },
  {
    name: 'cfn-signal',
    description: "signal a wait condition as heat-cfntools' cfn-signal does, through the agent's durable signal queue",
    load: async () => (await import('./cfn-signal-command.js')).defineCfnSignalCommand,
  },
  {
    name: 'cfn-init',
    description: "apply a resource's AWS::CloudFormation::Init metadata as heat-cfntools' cfn-init does",
    load: async () => {
      const { defineCfnInitCommand } = await import('./cfn-init-command.js');
      return (cmd, ctx) => defineCfnInitCommand(cmd, ctx.setExit);
    },
  },
  {
    name: 'cfn-get-metadata',
    description: "print a resource's metadata (or one key of it) as heat-cfntools' cfn-get-metadata does",
    load: async () => {
      const { defineCfnGetMetadataCommand } = await import('./cfn-get-metadata-command.js');
      return (cmd, ctx) => defineCfnGetMetadataCommand(cmd, ctx.setExit);
    },
  },
  {
    name: 'cfn-hup',
    description:
      "check the resources /etc/cfn/cfn-hup.conf's hooks watch once and fire the hooks whose triggers happened",
    load: async () => {
      const { defineCfnHupCommand } = await import('./cfn-hup-command.js');
      return (cmd, ctx) => defineCfnHupCommand(cmd, ctx.setExit);
    },
  },
  {
    name: 'completion',
    description: 'print the bash completion script of every command name (source it, or install it)',
    load: async () => (await import('./completion-command.js')).defineCompletionCommand,
  },
];
