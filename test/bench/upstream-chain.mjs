// Upstream's chain as an image with heat-agents' elements holds it, on a scratch tree, for the benchmarks that compare
// ours with it: Debian's os-collect-config -> os-refresh-config -> configure.d/20-os-apply-config (Debian's
// os-apply-config) and heat-agents' configure.d/55-heat-config, which hands each deployment to hook-script.py and
// heat-config-notify. heat-agents' files come from the checkout HEAT_AGENTS_DIR names (never committed).
import { chmodSync, copyFileSync, existsSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';

const FIFTY_FIVE = 'heat-config/os-refresh-config/configure.d/55-heat-config';

/** The heat-agents checkout HEAT_AGENTS_DIR names, checked; undefined when the variable is not set. */
export function heatAgentsDir(env = process.env) {
  const dir = env.HEAT_AGENTS_DIR;
  if (dir && !existsSync(path.join(dir, FIFTY_FIVE)))
    throw new Error(`HEAT_AGENTS_DIR=${dir} is not an openstack/heat-agents checkout (no ${FIFTY_FIVE})`);
  return dir;
}

/**
 * Lays out upstream's chain under `dir`: heat-config's own os-apply-config template (it renders the deployments list
 * that 55-heat-config reads) in `templates/`, the script hook in `hooks/`, both configure.d scripts in `orc/`, and an
 * os-collect-config.conf with one collector. `collector` is its name and its section's options (`path` of heat_local,
 * or the cfn keys); `polling` adds the DEFAULT section's intervals. Returns the environment the chain runs with and
 * the path of its os-collect-config.conf. The caller writes the metadata and any templates of its own.
 */
export function upstreamChain(dir, { heatAgents, env, collector, polling }) {
  const t = (rel) => path.join(dir, rel);
  for (const d of ['templates/var/run/heat-config', 'hooks', 'orc/configure.d', 'out', 'cache', 'work', 'outputs'])
    mkdirSync(t(d), { recursive: true });
  copyFileSync(
    path.join(heatAgents, 'heat-config/os-apply-config/var/run/heat-config/heat-config'),
    t('templates/var/run/heat-config/heat-config'),
  );
  copyFileSync(path.join(heatAgents, 'heat-config-script/install.d/hook-script.py'), t('hooks/script'));
  chmodSync(t('hooks/script'), 0o755);
  // Upstream's 20-os-apply-config is `exec os-apply-config` with the default template root and output `/`; the same
  // with both pointed into this tree, and the fallback metadata (real /var paths by default) at a file that is absent.
  // OS_CONFIG_FILES from os-collect-config names the metadata, as on an instance.
  writeFileSync(
    t('orc/configure.d/20-os-apply-config'),
    `#!/bin/bash\nset -ue\n\nexec os-apply-config -t '${t('templates')}' -o '${t('out')}' --fallback-metadata '${t('no-fallback')}'\n`,
    { mode: 0o755 },
  );
  copyFileSync(path.join(heatAgents, FIFTY_FIVE), t('orc/configure.d/55-heat-config'));
  chmodSync(t('orc/configure.d/55-heat-config'), 0o755);
  const confFile = t('os-collect-config.conf');
  // oslo.config expands `$name` in values: the paths hold none. 0600: the cfn section holds a secret key.
  writeFileSync(
    confFile,
    [
      '[DEFAULT]',
      `command = os-refresh-config --lockfile ${t('os-refresh-config.lock')}`,
      `cachedir = ${t('cache/os-collect-config')}`,
      `backup_cachedir = ${t('cache/os-collect-config-backup')}`,
      `collectors = ${collector.name}`,
      ...(polling ? [`min_polling_interval = ${polling.min}`, `polling_interval = ${polling.max}`] : []),
      '',
      `[${collector.name}]`,
      ...Object.entries(collector.options).map(([k, v]) => `${k} = ${v}`),
      '',
    ].join('\n'),
    { mode: 0o600 },
  );
  return {
    confFile,
    env: {
      ...env,
      // Debian ships the modules compiled; this only makes sure no Python writes a cache outside the scratch tree.
      PYTHONDONTWRITEBYTECODE: '1',
      OS_REFRESH_CONFIG_BASE_DIR: t('orc'),
      HEAT_SHELL_CONFIG: t('out/var/run/heat-config/heat-config'),
      HEAT_CONFIG_HOOKS: t('hooks'),
      HEAT_CONFIG_DEPLOYED: t('deployed'),
      HEAT_CONFIG_DEPLOYED_OLD: t('deployed-old'),
      HEAT_CONFIG_NOTIFY: path.join(heatAgents, 'heat-config/bin/heat-config-notify'),
      HEAT_SCRIPT_WORKING: t('work'),
      HEAT_SCRIPT_OUTPUTS: t('outputs'),
    },
  };
}
