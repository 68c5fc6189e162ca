// The one rule for names whose values are secret (deployment inputs, outputs shown by status): names containing
// password, passwd, secret, token, credential or private, and "key" as a word of its own (api_key, ssh_key, apiKey,
// keys; not keystone, keyboard or a Nova key_name). Their values are masked where they are shown and registered with
// the secret registry, so the logs and every output scrub them wherever else they turn up.
const SECRET_NAME = /password|passwd|secret|token|credential|private|known_hosts|key(?:s)?(?![a-z]|_?name)/i;

/** True for a name whose value must never be shown. */
export function isSecretName(name: string): boolean {
  return SECRET_NAME.test(name);
}
