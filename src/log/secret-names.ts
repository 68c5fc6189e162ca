// The one rule for names whose values are secret (docs/security.md#secrets), wherever a name comes with a value:
// deployment inputs and outputs, log fields, JSON fields in a line, URL query parameters, HTTP headers, unknown
// configuration options, the keys of the documents a support bundle copies. Names containing password, passwd,
// secret, token, credential, private, authorization or known_hosts; "key" as a word of its own (api_key, ssh_key,
// apiKey, keys; not keystone, keyboard or a Nova key_name); "signature" and "sig" as words of their own (Signature,
// X-Amz-Signature, temp_url_sig; not SignatureMethod or signal). Their values are masked where they are shown and
// registered with the secret registry, so every output scrubs them wherever else they turn up.
export const SECRET_NAME =
  /password|passwd|secret|token|credential|private|authorization|known_hosts|key(?:s)?(?![a-z]|_?name)|signature(?![a-z])|(?<![a-z])sig(?![a-z])/i;

/** True for a name whose value must never be shown. */
export function isSecretName(name: string): boolean {
  return SECRET_NAME.test(name);
}
