import type { ConfigSources, LoadedConfig } from '../config/load.js';
import type { HttpClient } from '../http/types.js';
import type { Logger } from '../log/logger.js';
import type { AfterCollectHook } from '../pipeline/contract.js';
import type { CfnHupService, OutboxPass, ReconvergePass, SignalQueueService } from './background-work.js';
import type { Pipeline } from './pipeline.js';
import type { ServiceNotifier } from './service-notifier.js';

// What an Agent is built from (src/cli/agent-factory.ts puts the parts together; tests put in their own): where the
// configuration comes from, the log, and the parts of a cycle and of the daemon loop that live in other layers.

export type AgentMode = 'collect' | 'run';

export interface AgentDeps {
  readonly sources: ConfigSources;
  readonly log: Logger;
  readonly mode: AgentMode;
  readonly createHttp: (loaded: LoadedConfig, log: Logger) => HttpClient;
  /** Builds the in-process pipeline for `run` mode (apply + deployments), when this build has one. */
  readonly nativePipeline?: (loaded: LoadedConfig, log: Logger) => Pipeline;
  readonly afterCollect?: readonly AfterCollectHook[];
  /** Background work of the daemon beside the poll loop (the deployment signal outbox): one pass, due again when it says. */
  readonly backgroundPass?: OutboxPass;
  /**
   * Re-runs of finished deployments on their reconverge intervals: one pass, due again when it says. A cycle with new
   * data stops it and holds it off while its pipeline runs: a new deployment goes first.
   */
  readonly reconverge?: ReconvergePass;
  /**
   * The queue of signals `os-config-agent cfn-signal` left for the daemon: a service that runs until the signal
   * aborts (in both loop modes; never with one_time).
   */
  readonly signalQueue?: SignalQueueService;
  /**
   * The built-in cfn-hup (a service like the signal queue, in both loop modes; never with one_time): checks the hooks
   * of /etc/cfn/cfn-hup.conf when that file exists.
   */
  readonly cfnHup?: CfnHupService;
  /** Non-zero exit in one-time mode when a source held bad data (not for the upstream-compatible command). */
  readonly strictExit?: boolean;
  /** True when deployments wait for this boot (the reboot they asked for): the first cycle then runs on unchanged metadata. */
  readonly resumeAfterBoot?: (loaded: LoadedConfig, log: Logger) => Promise<boolean>;
  readonly random?: () => number;
  /** The service manager (systemd Type=notify): told when start-up is done, of the loop's progress, of shutdown. */
  readonly service?: ServiceNotifier;
  /**
   * The agent's entry bundle as installed (the file node runs): the daemon loop records its identity at start and
   * compares it after every pass, to notice that the agent was upgraded under it (self-upgrade.ts). Off when absent.
   */
  readonly entryFile?: string;
  /** The environment systemd started the process with (INVOCATION_ID, NOTIFY_SOCKET); process.env by default. */
  readonly env?: NodeJS.ProcessEnv;
}
