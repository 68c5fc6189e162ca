import { secretOutputTexts } from '../heat/deployment.js';
import { releaseSecrets, setSecrets } from '../log/redact.js';

// The outputs a hook returned under secret names (the one rule, src/log/secret-names.ts), scrubbed from every log
// line from the moment the hook ends, as `status` scrubs them: a script that prints the password it also returns as
// an output must not put it in the journal through the hook's stderr tail. Each deployment is its own owner in the
// logger's registry, held while the metadata lists the deployment; only deployments with such outputs hold one.

const OWNER_PREFIX = 'deployment-outputs:';
const holding = new Set<string>();

/** Scrub the secret-named outputs of deployment `id`'s latest result, replacing those of its earlier runs. */
export function holdOutputSecrets(id: string, body: Readonly<Record<string, unknown>>): void {
  const values = secretOutputTexts(body);
  if (values.length > 0) {
    setSecrets(OWNER_PREFIX + id, values);
    holding.add(id);
  } else if (holding.delete(id)) releaseSecrets(OWNER_PREFIX + id);
}

/** Stop scrubbing the outputs of deployments the metadata no longer lists. */
export function releaseOutputSecretsExcept(listed: ReadonlySet<string>): void {
  for (const id of holding) {
    if (listed.has(id)) continue;
    holding.delete(id);
    releaseSecrets(OWNER_PREFIX + id);
  }
}
