// The layer graph of src/ and the lint rule that enforces it (eslint.config.js turns it on for src/**).
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const srcDir = fileURLToPath(new URL('./src', import.meta.url));

// The foundation, bottom up: each may import the ones before it.
const FOUNDATION = ['errors.ts', 'version.ts', 'util', 'log', 'http', 'config'];
const foundationUpTo = (name) => FOUNDATION.slice(0, FOUNDATION.indexOf(name));

/** What the checks of `doctor` may reach: everything below the loop and the entry points. */
const DOCTOR_REACH = [
  ...FOUNDATION,
  'keystone',
  'collectors',
  'pipeline',
  'cache',
  'apply',
  'refresh',
  'heat',
  'state',
  'signals',
  'hooks',
  'deploy',
  'status',
];

/** Folder (or file directly in src/) -> what it may import. Anything not listed is refused. */
export const LAYERS = {
  'errors.ts': [],
  'version.ts': [],
  util: foundationUpTo('util'),
  log: foundationUpTo('log'),
  http: foundationUpTo('http'),
  config: foundationUpTo('config'),
  // OpenStack's identity service: sessions, discovery, tokens.
  keystone: [...FOUNDATION],
  // Metadata sources and what a collection pass hands on.
  collectors: [...FOUNDATION, 'keystone'],
  // The contract between the poll loop and the steps it runs after a collection.
  pipeline: [...FOUNDATION, 'collectors'],
  cache: [...FOUNDATION],
  apply: [...FOUNDATION],
  refresh: [...FOUNDATION],
  // Heat's input and output formats.
  heat: [...FOUNDATION],
  // Durable state: the machine, records, the store.
  state: [...FOUNDATION, 'heat'],
  // Delivery of signals: one engine, its transports, the cfn-signal queue.
  signals: [...FOUNDATION, 'keystone', 'heat', 'state'],
  // Hooks: each is also a standalone executable, so nothing of the agent's state, signals, pass or status.
  hooks: [...FOUNDATION, 'apply', 'heat'],
  deploy: [...FOUNDATION, 'pipeline', 'apply', 'heat', 'state', 'signals', 'hooks'],
  // heat-cfntools' commands (cfn-init, cfn-get-metadata, cfn-hup): the cfn-init hook's interpreter, the cfn collector's
  // signed request, the state layer's lock file.
  cfntools: [...FOUNDATION, 'collectors', 'heat', 'state', 'hooks'],
  status: [...FOUNDATION, 'heat', 'state', 'signals'],
  'self-config': [...FOUNDATION, 'collectors', 'pipeline'],
  // The idle daemon stays small: what a cycle or a signal needs is loaded only when it is needed (import()), so these
  // are type-only here (TYPE_ONLY).
  daemon: [...FOUNDATION, 'keystone', 'collectors', 'pipeline', 'cache', 'self-config', 'status', 'state'],
  doctor: DOCTOR_REACH,
  // A support bundle: the status, the doctor's report, the state on disk, with every secret removed.
  support: [...DOCTOR_REACH, 'doctor'],
  cli: ['*'],
  launch: ['*'],
  'bin.ts': ['*'],
  'cfn-bin.ts': ['*'],
};

/** Folder -> folders it may import only as types (a static value import there would load them at start). */
export const TYPE_ONLY = {
  daemon: ['deploy', 'signals', 'apply', 'refresh', 'hooks', 'cfntools'],
};

/**
 * The layer rule: a relative import (static, or a re-export) from a file of src/ that resolves into a folder its layer
 * may not import is an error; into a TYPE_ONLY folder, unless every name it imports is a type. import() is not checked:
 * loading an upper layer lazily is how the lower ones reach it.
 */
export const layerRule = {
  meta: {
    type: 'problem',
    schema: [],
    messages: {
      refused:
        '{{from}} may not import {{to}} (the layer graph in eslint.layers.js): move what is needed down, or declare an interface here',
      typeOnly:
        '{{from}} may import {{to}} only as types, and load it with import() where it is used (eslint.layers.js: the idle daemon stays small)',
    },
  },
  create(context) {
    const file = path.relative(srcDir, context.filename);
    if (file.startsWith('..')) return {};
    const from = layerOf(file);
    const allowed = LAYERS[from];
    if (allowed === undefined || allowed.includes('*')) return {};
    const check = (node, typeOnly) => {
      const spec = node.source?.value;
      if (typeof spec !== 'string' || !spec.startsWith('.')) return;
      const target = path.relative(srcDir, path.resolve(path.dirname(context.filename), spec));
      if (target.startsWith('..')) return;
      const to = layerOf(target);
      if (to === from || allowed.includes(to)) return;
      if (typeOnly && (TYPE_ONLY[from] ?? []).includes(to)) return;
      const messageId = (TYPE_ONLY[from] ?? []).includes(to) ? 'typeOnly' : 'refused';
      context.report({ node: node.source, messageId, data: { from, to } });
    };
    const allTypes = (node) =>
      node.importKind === 'type' ||
      (node.specifiers.length > 0 && node.specifiers.every((s) => s.importKind === 'type'));
    return {
      ImportDeclaration: (node) => check(node, allTypes(node)),
      ExportNamedDeclaration: (node) =>
        check(
          node,
          node.exportKind === 'type' ||
            (node.specifiers.length > 0 && node.specifiers.every((s) => s.exportKind === 'type')),
        ),
      ExportAllDeclaration: (node) => check(node, node.exportKind === 'type'),
    };
  },
};

/** The layer of a path relative to src/: its first folder, or the file's own name when it is directly in src/. */
function layerOf(relative) {
  const [first, ...rest] = relative.split(path.sep);
  if (rest.length > 0) return first;
  return /\.[cm]?[jt]s$/.test(first) ? first.replace(/\.js$/, '.ts') : first;
}
