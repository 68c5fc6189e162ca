// The template set the apply and cycle benchmarks render: each template has 50 scalars, a nested object and a
// 20-item section, so that rendering does real work; its metadata in variants (v > 0 changes every scalar, so every
// rendered file changes).

export const TEMPLATE_BODY = [
  ...Array.from({ length: 50 }, (_, k) => `key${k} = {{key${k}}}`),
  'port = {{nested.port}} enabled = {{nested.enabled}} list = {{nested.list}}',
  '{{#items}}',
  '  {{name}}: {{value}}',
  '{{/items}}',
  '',
].join('\n');

/** The values TEMPLATE_BODY reads, in variant `v`. */
export function templateMetadata(v = 0) {
  const suffix = v === 0 ? '' : `-v${v}`;
  const metadata = { items: Array.from({ length: 20 }, (_, i) => ({ name: `item-${i}${suffix}`, value: i })) };
  for (let k = 0; k < 50; k++) metadata[`key${k}`] = `value-${k}${suffix}`;
  metadata.nested = { port: 8080, enabled: true, list: ['a', 'b'] };
  return metadata;
}
