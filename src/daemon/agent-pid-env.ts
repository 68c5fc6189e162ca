// The daemon tells everything it starts (the command, os-refresh-config phases, hooks and what they run) which
// process it is. The Debian package's postinst reads it: an upgrade run from inside one of the agent's own
// deployments must not have systemd restart the agent, because stopping the agent ends the deployment's process
// group, which is apt and dpkg themselves. The agent restarts itself after the pass instead (self-upgrade.ts).

export const AGENT_PID_ENV = 'OS_CONFIG_AGENT_PID';

/**
 * Sets OS_CONFIG_AGENT_PID in the environment children inherit; returns what puts the previous value back. Every
 * child process is started with `env` (the process environment), so one assignment reaches them all.
 */
export function exportAgentPid(env: NodeJS.ProcessEnv = process.env, pid: number = process.pid): () => void {
  const previous = env[AGENT_PID_ENV];
  env[AGENT_PID_ENV] = String(pid);
  return () => {
    if (previous === undefined) delete env[AGENT_PID_ENV];
    else env[AGENT_PID_ENV] = previous;
  };
}
