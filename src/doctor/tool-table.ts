// The program each hook group drives, as the agent's built-in hooks choose it: the hook's own variable (upstream's
// names, read from the environment the agent runs in) when set, else the upstream default. `alternatives` are tried
// in order (docker-cmd falls back to podman). Groups without an entry drive nothing outside the agent.

export interface ToolNeed {
  /** Commands of which one must be installed (a name looked up in PATH, or an absolute path). */
  readonly alternatives: readonly string[];
  /** The variable that names the command, for the fix. */
  readonly variable?: string;
  /** What to install, for the fix. */
  readonly install: string;
}

const fromEnv = (env: NodeJS.ProcessEnv, name: string): string | undefined => (env[name] ? env[name] : undefined);

export function toolFor(group: string, env: NodeJS.ProcessEnv): ToolNeed | undefined {
  const need = (variable: string, fallback: readonly string[], install: string): ToolNeed => {
    const set = fromEnv(env, variable);
    return { alternatives: set ? [set] : fallback, variable, install };
  };
  switch (group) {
    case 'script':
      return { alternatives: ['bash'], install: 'install bash (the usual interpreter of script configs)' };
    case 'puppet':
      return need('HEAT_PUPPET_CMD', ['puppet'], "install puppet (Debian, Ubuntu, Fedora) or Puppet's puppet-agent");
    case 'ansible':
      return need('HEAT_ANSIBLE_CMD', ['ansible-playbook'], 'install ansible (ansible-core on CentOS and RHEL)');
    case 'chef':
      return need('HEAT_CHEF_CMD', ['chef-client'], 'install Chef Infra Client or Cinc Client');
    case 'salt':
      return need('HEAT_SALT_CMD', ['salt-call'], 'install salt-minion (it provides salt-call)');
    case 'docker-cmd':
    case 'kubelet':
      return need('HEAT_DOCKER_CMD', ['docker', 'podman'], 'install docker.io (Debian, Ubuntu), docker-ce or podman');
    case 'docker-compose':
      // Without the variable, compose v2 (`docker compose`) is used when docker has it, else docker-compose.
      return need(
        'HEAT_DOCKER_COMPOSE_CMD',
        ['docker-compose', 'docker'],
        'install docker-compose, or docker with its compose plugin',
      );
    case 'cfn-init': {
      const set = fromEnv(env, 'HEAT_CFN_INIT_CMD');
      // Unset, the agent's own cfn-init interpreter applies the metadata: nothing to install.
      return set
        ? {
            alternatives: [set],
            variable: 'HEAT_CFN_INIT_CMD',
            install: 'install heat-cfntools, or unset HEAT_CFN_INIT_CMD to use the built-in cfn-init',
          }
        : undefined;
    }
    case 'apply-config': {
      const set = fromEnv(env, 'HEAT_APPLY_CONFIG_CMD');
      return set
        ? {
            alternatives: [set],
            variable: 'HEAT_APPLY_CONFIG_CMD',
            install: "install it, or unset HEAT_APPLY_CONFIG_CMD to use the agent's own apply",
          }
        : undefined;
    }
    default:
      return undefined;
  }
}
