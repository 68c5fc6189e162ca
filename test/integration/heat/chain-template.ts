// A stack of chained script deployments on one CFN-polling server, as Heat users write a chain: each deployment takes
// the previous one's output as an input, so Heat adds it to the server's metadata only after that one has been
// signalled. Link n's script appends ">n" to what it received; the stack output `last` is the whole chain's value.

export interface ChainOptions {
  /**
   * Seconds the first link waits for a resource before it (an OS::Heat::TestResource): the chain then begins after the
   * agent's idle back-off has grown, as on a server that has been up for a while.
   */
  readonly delaySeconds?: number;
}

/** The value of the stack output `last` for a chain of `links` given `seed`. */
export function chainValue(seed: string, links: number): string {
  return seed + Array.from({ length: links }, (_, i) => `>${i + 1}`).join('');
}

/** Heat template (JSON, which Heat reads as YAML) of a chain of `links` deployments. */
export function chainedTemplate(links: number, options: ChainOptions = {}): string {
  const resources: Record<string, unknown> = {
    server: {
      type: 'OS::Heat::DeployedServer',
      properties: { software_config_transport: 'POLL_SERVER_CFN' },
    },
    link_config: {
      type: 'OS::Heat::SoftwareConfig',
      properties: {
        group: 'script',
        inputs: [{ name: 'previous' }, { name: 'n' }],
        outputs: [{ name: 'value' }],
        config: '#!/bin/sh\nprintf \'%s>%s\' "$previous" "$n" > "$heat_outputs_path.value"\n',
      },
    },
  };
  if (options.delaySeconds !== undefined) {
    resources.delay = {
      type: 'OS::Heat::TestResource',
      properties: { value: 'waited', action_wait_secs: { create: options.delaySeconds } },
    };
  }
  for (let n = 1; n <= links; n++) {
    resources[`link${n}`] = {
      type: 'OS::Heat::SoftwareDeployment',
      ...(n === 1 && options.delaySeconds !== undefined ? { depends_on: ['delay'] } : {}),
      properties: {
        config: { get_resource: 'link_config' },
        server: { get_resource: 'server' },
        signal_transport: 'CFN_SIGNAL',
        input_values: {
          previous: n === 1 ? { get_param: 'seed' } : { get_attr: [`link${n - 1}`, 'value'] },
          n: String(n),
        },
      },
    };
  }
  return JSON.stringify({
    heat_template_version: '2018-08-31',
    description: `${links} chained script deployments on one CFN-polling server`,
    parameters: { seed: { type: 'string' } },
    resources,
    outputs: { last: { value: { get_attr: [`link${links}`, 'value'] } } },
  });
}
