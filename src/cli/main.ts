import path from 'node:path';
import type { Command } from 'commander';
import { AGENT_COMMAND, isCfnCommand, isCommandName, type CommandName } from './command-names.js';
import { newProgram, parseProgram, type ProgramName } from './program.js';

// Entry point. One bundle serves every command name (src/cli/command-names.ts): `os-config-agent <subcommand>` and the
// compatibility names, chosen by the name the program was started as.

export function programNameFrom(argv1: string | undefined): ProgramName {
  const base = path.basename(argv1 ?? '').replace(/\.(m?js|cjs)$/, '');
  return isCommandName(base) ? base : AGENT_COMMAND;
}

interface LazySubcommand {
  readonly name: string;
  readonly description: string;
  load(): Promise<(cmd: Command, setExit: (code: number) => void) => unknown>;
}

const LAZY_SUBCOMMANDS: readonly LazySubcommand[] = [
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
    load: async () => (await import('./cfn-init-command.js')).defineCfnInitCommand,
  },
  {
    name: 'cfn-get-metadata',
    description: "print a resource's metadata (or one key of it) as heat-cfntools' cfn-get-metadata does",
    load: async () => (await import('./cfn-get-metadata-command.js')).defineCfnGetMetadataCommand,
  },
  {
    name: 'cfn-hup',
    description:
      "check the resources /etc/cfn/cfn-hup.conf's hooks watch once and fire the hooks whose triggers happened",
    load: async () => (await import('./cfn-hup-command.js')).defineCfnHupCommand,
  },
  {
    name: 'doctor',
    description: 'check the configuration, endpoints, credentials, clock, hooks and disk; exit 1 when a check fails',
    load: async () => (await import('./doctor-command.js')).defineDoctorCommand,
  },
  {
    name: 'status',
    description:
      'the agent, its sources, every deployment and undelivered signals (or one deployment); --wait until done',
    load: async () => (await import('./status-command.js')).defineStatusCommand,
  },
];

export async function main(args: readonly string[], name: ProgramName): Promise<number> {
  let exitCode = 0;
  const setExit = (code: number) => {
    exitCode = code;
  };
  const program = newProgram(name);

  if (name === 'os-collect-config') {
    program.description(
      'Collect metadata from cloud sources and run a command when it changes (os-collect-config compatible).',
    );
    (await import('./collect-command.js')).defineCollectCommand(program, { strictExit: false, setExit });
  } else if (name === 'os-apply-config') {
    // compat: os-apply-config
    (await import('./os-apply-config-command.js')).defineOsApplyConfigCommand(program, setExit);
  } else if (name === 'os-refresh-config') {
    // compat: os-refresh-config
    (await import('./refresh-command.js')).defineRefreshCompatCommand(program, setExit);
  } else if (isCfnCommand(name) && name !== 'cfn-signal') {
    // compat: heat-cfntools' other commands
    await defineCfnCommand(program, name, setExit);
  } else if (name === 'cfn-signal') {
    // compat: heat-cfntools' cfn-signal
    program.description(
      'Signal a wait condition (heat-cfntools cfn-signal compatible), through the os-config-agent signal queue.',
    );
    (await import('./cfn-signal-command.js')).defineCfnSignalCommand(program, setExit, 'cfn-signal');
  } else {
    program.description('In-instance agent for OpenStack Heat software configuration.');
    const { defineCollectCommand } = await import('./collect-command.js');
    const { defineRunCommand } = await import('./run-command.js');
    defineCollectCommand(
      program.command('collect').description('collect metadata; print it, or run the configured command on change'),
      {
        strictExit: true,
        setExit,
      },
    );
    defineRunCommand(
      program.command('run').description('the daemon: collect, apply, deploy, signal; loops unless --one-time'),
      setExit,
    );
    // The other subcommands load their code only when they are the one run (or help lists them in full): the
    // daemon then never parses the apply, refresh and deploy command modules (nor the YAML parser), which keeps its
    // resident size down on every server.
    const wanted = args.find((a) => !a.startsWith('-'));
    const full = wanted === 'help' || args.includes('--help') || args.includes('-h');
    for (const sub of LAZY_SUBCOMMANDS) {
      const cmd = program.command(sub.name).description(sub.description);
      if (full || wanted === sub.name) (await sub.load())(cmd, setExit);
    }
  }

  return parseProgram(program, args, name, () => exitCode);
}

/** heat-cfntools' cfn-init, cfn-get-metadata, cfn-hup, cfn-push-stats and cfn-create-aws-symlinks, by name. */
async function defineCfnCommand(program: Command, name: CommandName, setExit: (code: number) => void): Promise<void> {
  program.description(`${name}: heat-cfntools' ${name}, by os-config-agent (docs/cfntools.md).`);
  if (name === 'cfn-init') (await import('./cfn-init-command.js')).defineCfnInitCommand(program, setExit);
  else if (name === 'cfn-get-metadata')
    (await import('./cfn-get-metadata-command.js')).defineCfnGetMetadataCommand(program, setExit);
  else if (name === 'cfn-hup') (await import('./cfn-hup-command.js')).defineCfnHupCommand(program, setExit);
  else if (name === 'cfn-push-stats')
    (await import('./cfn-aws-commands.js')).defineCfnPushStatsCommand(program, setExit);
  else (await import('./cfn-aws-commands.js')).defineCfnCreateAwsSymlinksCommand(program, setExit);
}
