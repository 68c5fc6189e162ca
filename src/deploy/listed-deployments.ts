import { parseDeployment, secretInputTexts, type Deployment } from '../heat/deployment.js';
import { setSecrets } from '../log/redact.js';
import type { DeployContext } from './context.js';
import { releaseOutputSecretsExcept } from './output-secrets.js';

// The deployments Heat lists now, parsed: invalid entries and repeated ids are logged and left out, and the secret
// inputs of the valid ones go on the logger's list of values never to print.

/** The logger's owner of the secret inputs of the deployments in the metadata. */
const DEPLOYMENT_SECRETS_OWNER = 'deployments';

export interface ListedDeployments {
  readonly list: Deployment[];
  readonly invalid: number;
}

export function listDeployments(ctx: DeployContext): ListedDeployments {
  const { log } = ctx;
  const list: Deployment[] = [];
  const seen = new Set<string>();
  let invalid = 0;
  for (const [index, raw] of (ctx.deployments ?? []).entries()) {
    const parsed = parseDeployment(raw);
    if (!parsed.ok) {
      invalid++;
      log.warn({ index, reason: parsed.reason }, 'deployment skipped: invalid');
      continue;
    }
    const dep = parsed.deployment;
    if (seen.has(dep.id)) {
      log.warn(
        { deploymentId: dep.id, deploymentName: dep.name, index },
        'deployment listed twice; the first entry is used',
      );
      continue;
    }
    seen.add(dep.id);
    for (const problem of parsed.warnings)
      log.warn({ deploymentId: dep.id, deploymentName: dep.name, problem }, 'deployment has a problem');
    list.push(dep);
  }
  // The secret inputs of the deployments the metadata lists now, replacing the last pass's: a deployment that is
  // gone takes its secrets, inputs and outputs, off the logger's list.
  setSecrets(DEPLOYMENT_SECRETS_OWNER, list.flatMap(secretInputTexts));
  releaseOutputSecretsExcept(seen);
  return { list, invalid };
}
