// The agent's configuration schema: every section and option of os-collect-config 12.0.0 with its upstream default,
// plus the agent's own sections ([agent], [apply], [refresh], [deploy]) that upstream ignores as unknown groups.
// The AgentConfig type is derived from this table, so an option exists in exactly one place.

import { LOG_LEVELS, parseLogLevel } from '../log/log-level.js';
import { bool, float, int, MAX_TIMER_SECONDS, multi, path, secret, str, type OptionSpec } from './option-spec.js';
import { cpuQuotaProblem, memoryMaxProblem, namePartProblem, urlProblem } from './value-checks.js';

// A duration the agent waits with a timer: Node's timers cannot wait longer than 2^31-1 ms and fire at once instead
// (polling_interval = 3000000 polled over a hundred times a second), so a longer one is a configuration problem.
const TIMER = { max: MAX_TIMER_SECONDS };
/** An option holding an http(s) URL: checked when read. */
const URL_OPTION = { check: (value: string) => urlProblem(value), unquoted: true };
/** A proxy: an http(s) URL, or host[:port] meaning http. */
const PROXY_OPTION = { check: (value: string) => urlProblem(value, { schemeOptional: true }), unquoted: true };

export const DEFAULT_COLLECTORS = ['heat_local', 'ec2', 'cfn', 'heat', 'request', 'local', 'zaqar'] as const;

export const SCHEMA = {
  DEFAULT: {
    command: str(
      undefined,
      'Command to run when metadata changes (run through /bin/sh -c, with OS_CONFIG_FILES set).',
      { short: 'c' },
    ),
    cachedir: path('/var/lib/os-collect-config', 'Directory holding the metadata cache.'),
    backup_cachedir: path(
      '/var/run/os-collect-config',
      'Mirror of the cache directory, refreshed before the command runs.',
    ),
    collectors: multi(DEFAULT_COLLECTORS, 'Collectors to use, in order (positional arguments on the command line).', {
      fileOnly: true,
    }),
    one_time: bool(false, 'Do one cycle and exit.'),
    min_polling_interval: float(
      1,
      'First sleep between polls, in seconds; doubles every cycle up to polling_interval.',
      TIMER,
    ),
    polling_interval: float(30, 'Longest sleep between polls, in seconds.', { short: 'i', ...TIMER }),
    print_cachedir: bool(false, 'Print the cache directory and exit.'),
    force: bool(false, 'Run the command even if nothing changed (implies --one-time).'),
    print_only: bool(false, 'Collect, print the merged metadata as JSON and exit; run nothing.', { flag: 'print' }),
    deployment_key: multi(
      ['deployments'],
      'Top-level keys whose deployment lists are exploded into extra cache entries.',
    ),
    splay: float(0, 'Sleep a random whole number of seconds below this before the first poll (daemon mode).', TIMER),
  },
  ec2: {
    metadata_url: str(
      undefined,
      'EC2 metadata service URL. When set it is the only one asked (empty: no metadata service, config drive only); unset: metadata_urls.',
      {
        ...URL_OPTION,
        // Not the default list: a mistyped URL must not send requests to addresses the operator did not name.
        onInvalid: { value: '', meaning: 'no metadata service is asked until it is fixed' },
      },
    ),
    metadata_urls: multi(
      [
        'http://169.254.169.254/latest/meta-data',
        'http://[fe80::a9fe:a9fe%25*]/latest/meta-data',
        'http://[fd00:ec2::254]/latest/meta-data',
      ],
      'Metadata service URLs tried in order until one answers (remembered for next time); zone `%25*` means each up interface with an IPv6 link-local address.',
      URL_OPTION,
    ),
    timeout: float(10, 'Seconds to wait for each request or config drive tool run.', TIMER),
  },
  cfn: {
    metadata_url: str(
      undefined,
      'heat-api-cfn URL (defaults to the contents of heat_metadata_hint plus /v1/).',
      URL_OPTION,
    ),
    heat_metadata_hint: path(
      '/var/lib/heat-cfntools/cfn-metadata-server',
      'File whose contents name the CFN metadata server.',
    ),
    ca_certificate: path(undefined, 'CA certificate file to verify the CFN server with.'),
    stack_name: str(undefined, 'Stack name to describe.', { check: namePartProblem }),
    path: multi([], 'Resource.Metadata[.key...] paths to fetch, in order.'),
    secret_access_key: secret('Secret key used to sign requests.'),
    access_key_id: str(undefined, 'Access key id used to sign requests.'),
    deployment_key: multi(
      ['deployments'],
      'Deployment keys exploded by the cfn collector (upstream keeps this per-section key).',
    ),
    timeout: float(10, 'Seconds to wait for each request.', TIMER),
  },
  heat: {
    user_id: str(undefined, 'Keystone user id.'),
    password: secret('Keystone password.'),
    project_id: str(undefined, 'Keystone project id.'),
    auth_url: str(undefined, 'Keystone URL.', URL_OPTION),
    stack_id: str(undefined, 'Stack id (name/id).'),
    resource_name: str(undefined, 'Server resource name.'),
    region_name: str(undefined, 'Region of the orchestration endpoint.'),
    timeout: float(10, 'Seconds to wait for each request (upstream had none).', TIMER),
  },
  heat_local: {
    path: multi(
      ['/var/lib/heat-cfntools/cfn-init-data'],
      'Local files with Heat metadata, merged shallowly in order.',
      { path: true },
    ),
  },
  local: {
    path: multi(['/var/lib/os-collect-config/local-data'], 'Directories of JSON files.', { path: true }),
  },
  request: {
    metadata_url: str(undefined, 'URL to fetch metadata from (for example a Swift TempURL).', URL_OPTION),
    timeout: float(10, 'Seconds to wait for each request.', TIMER),
  },
  keystone: {
    cache_dir: path(
      undefined,
      'Directory where the heat and zaqar collectors keep their Keystone tokens across restarts (unset: in memory only).',
    ),
    cache_ttl: int(1800, 'Longest age, in seconds, of a token reused from cache_dir.'),
  },
  zaqar: {
    user_id: str(undefined, 'Keystone user id.'),
    password: secret('Keystone password.'),
    project_id: str(undefined, 'Keystone project id.'),
    auth_url: str(undefined, 'Keystone URL.', URL_OPTION),
    queue_id: str(undefined, 'Zaqar queue to consume.'),
    use_websockets: bool(
      false,
      "Talk to Zaqar over its websocket API (the catalog's messaging-websocket service), for this collector and for ZAQAR_SIGNAL signals.",
    ),
    region_name: str(undefined, 'Region of the messaging endpoint.'),
    ssl_certificate_validation: bool(false, 'Verify the Zaqar TLS certificate.'),
    ca_file: path(undefined, 'CA file for Zaqar TLS.'),
    timeout: float(10, 'Seconds to wait for each request (upstream had none).', TIMER),
  },
  agent: {
    log_level: str('info', `Log level: ${LOG_LEVELS.join(', ')} (warning and critical are aliases).`, {
      check: (value) => {
        try {
          parseLogLevel(value);
          return undefined;
        } catch {
          return `"${value}" is not a log level (${LOG_LEVELS.join(', ')})`;
        }
      },
    }),
    log_format: str(
      '',
      'How log lines are written: json (one object a line) or text (the message, then key=value); empty: text on a terminal, JSON anywhere else (journald, files, pipes).',
      { choices: ['', 'json', 'text'] },
    ),
    native_pipeline: bool(
      true,
      'In `run`, apply templates and run deployments in-process (false: run `command` like upstream).',
    ),
    state_dir: path('/var/lib/os-config-agent', "Directory for the agent's own state."),
    config_target: path(
      '/etc/os-collect-config.conf',
      "Config file the agent rewrites from Heat's os-collect-config metadata (empty: never).",
    ),
    watch: bool(true, 'Watch local sources and start a cycle as soon as they change.'),
    watch_debounce: float(0.02, 'Seconds to wait for a burst of local changes to settle.', TIMER),
    poll_after_signal: bool(
      true,
      "After the agent signals Heat, poll three times at min_polling_interval, then back off to polling_interval again (false: upstream's sequence, which never shrinks).",
    ),
    poll_jitter: float(0.1, 'Random fraction (0-1) added to each sleep so a fleet does not poll in lockstep.', {
      max: 1,
    }),
    http_max_bytes: int(16 * 1024 * 1024, 'Largest metadata response accepted, in bytes.'),
    http_retries: int(
      2,
      "Retries of a failed request within one poll (5xx and network errors only), made only within the request's timeout, which bounds all its attempts together.",
    ),
    http_proxy: str(
      undefined,
      'Proxy for http:// requests, http://[user:password@]host[:port]; replaces $http_proxy / $HTTP_PROXY (empty: none).',
      PROXY_OPTION,
    ),
    https_proxy: str(
      undefined,
      'Proxy for https:// requests (tunnelled with CONNECT); replaces $https_proxy / $HTTPS_PROXY (empty: none).',
      PROXY_OPTION,
    ),
    no_proxy: str(
      undefined,
      'Hosts, domains, addresses and CIDRs (each optionally :port) reached without a proxy, comma-separated, `*` for all; replaces $no_proxy.',
    ),
    max_source_bytes: int(16 * 1024 * 1024, 'Largest local metadata file accepted, in bytes.'),
    console: path(
      undefined,
      'File to write one line to per deployment state change, e.g. /dev/console, so the console log tells what happened (empty: off).',
    ),
    watchdog_stall: int(
      900,
      'Under a systemd watchdog (WatchdogSec=): seconds the poll loop may go without progress (a cycle step, a process starting or ending) before the watchdog is no longer fed and systemd restarts the agent; a process with a timeout extends it to that timeout.',
      { min: 1, ...TIMER },
    ),
  },
  apply: {
    templates: path(
      undefined,
      'Template root (default as os-apply-config: $OS_CONFIG_APPLIER_TEMPLATES or /usr/libexec/os-apply-config/templates).',
    ),
    output: path('/', 'Output root for rendered files.'),
    strict: bool(
      false,
      'Fail the render when a template names a missing key (default: warn and render empty, as upstream).',
    ),
    legacy_log_file: bool(
      false,
      'Also append to /var/log/os-apply-config.log when running as root (upstream behaviour).',
    ),
  },
  refresh: {
    base_dir: path(
      undefined,
      'Phase script base directory (default as os-refresh-config: $OS_REFRESH_CONFIG_BASE_DIR or /usr/libexec/os-refresh-config).',
    ),
    lockfile: path('/var/run/os-refresh-config.lock', 'Lock file held while phases run.'),
    timeout: int(0, 'Seconds before all phase scripts are killed (0: no limit).', TIMER),
  },
  deploy: {
    hooks_dir: multi(
      ['/usr/libexec/heat-config/hooks', '/var/lib/heat-config/hooks'],
      "Directories searched for hooks, in order, after $HEAT_CONFIG_HOOKS (upstream's order).",
      { path: true },
    ),
    hooks_in_process: bool(
      true,
      "Run a hook inside the agent when the installed file is the agent's own build of it (false: every hook runs as its own process).",
    ),
    deployed_dir: path('/var/lib/heat-config/deployed', 'Deployment state directory (upstream file names).'),
    heat_config_file: path('/var/run/heat-config/heat-config', 'Deployments file written for upstream tools.'),
    hook_timeout: int(3600, 'Seconds a hook may run before its process group is killed (0: no limit).', TIMER),
    signal_timeout: float(30, 'Seconds to wait for one signal request.', TIMER),
    signal_max_backoff: float(300, 'Longest wait between signal retries, in seconds.', TIMER),
    signal_max_attempts: int(50, "Signal attempts before a deployment's signal is given up (a 4xx ends it at once)."),
    prune_after: float(30, 'Days after which records of removed deployments are deleted.'),
    reconverge_interval: multi(
      [],
      "Re-run the finished deployments of a group on an interval, with the inputs they last had and without signalling Heat, as `group:seconds` entries (`puppet:1800, ansible:3600`; seconds a plain decimal number of at least 60; `group:0` turns a group off); a deployment's own options.reconverge_interval wins (empty: no group is re-run).",
    ),
    reboot_command: str(
      'systemctl reboot',
      'Command (run through /bin/sh -c) that reboots the machine when a hook exits with 194; the deployment runs again after the boot (empty: reboots off, exit 194 is a failure).',
    ),
    hook_memory_max: str(
      '',
      "Memory limit of each deployment's processes (systemd MemoryMax=: 512M, 2G, 50%); applied in a transient scope when systemd is PID 1 (empty: none).",
      { check: memoryMaxProblem },
    ),
    hook_cpu_quota: str(
      '',
      "CPU limit of each deployment's processes (systemd CPUQuota=: 50% of one CPU, 200% of two); as hook_memory_max (empty: none).",
      { check: cpuQuotaProblem },
    ),
    hook_tasks_max: int(
      0,
      'Most processes and threads of each deployment (systemd TasksMax=); as hook_memory_max (0: none).',
    ),
  },
} as const;

export type Schema = typeof SCHEMA;
export type SectionName = keyof Schema;
type ValueOf<O> = O extends OptionSpec<infer T> ? T : never;
export type AgentConfig = {
  readonly [S in SectionName]: { readonly [K in keyof Schema[S]]: ValueOf<Schema[S][K]> };
};

export const SECTION_NAMES = Object.keys(SCHEMA) as SectionName[];

export function sectionSpecs(section: SectionName): Record<string, OptionSpec<unknown>> {
  return SCHEMA[section] as unknown as Record<string, OptionSpec<unknown>>;
}

// Own-property lookups only: a section or option named "constructor" or "__proto__" is unknown, not Object's.
export function isSection(name: string): name is SectionName {
  return Object.hasOwn(SCHEMA, name);
}

export function specOf(section: SectionName, name: string): OptionSpec<unknown> | undefined {
  const specs = sectionSpecs(section);
  return Object.hasOwn(specs, name) ? specs[name] : undefined;
}

/** The command-line flag of an option: `--name` in DEFAULT, `--section-name` elsewhere, dashes for underscores. */
export function flagName(section: SectionName, name: string, spec: OptionSpec<unknown>): string {
  const base = spec.flag ?? name;
  const full = section === 'DEFAULT' ? base : `${section}-${base}`;
  return full.replace(/_/g, '-');
}
