import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import ts from 'typescript';
import { isSecretField, NOT_SECRET_FIELDS } from '../../src/log/redact.js';
import { isSecretName } from '../../src/log/secret-names.js';
import { REPO } from '../helpers/bundle.js';

// One name per field across the agent (docs/logging.md#fields): every field a log call of src/ writes is in the
// table, and every field of the table is written somewhere. Read with TypeScript's parser: the object literal given
// to a logger (log.info({...}, msg), log[level]({...}), log.child({...})) and the fields of a deployment's state
// change (store.transition(record, to, patch, {...})), spreads included.

const LEVEL_METHODS = new Set(['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'child']);
/** Names that each stood for a thing with another name, before there was one name for it. */
const RETIRED: Record<string, string> = {
  hookGroup: 'group',
  seconds: 'durationMs or delayMs',
  status: 'httpStatus or exitCode',
  error: 'reason (text) or err (an Error)',
  retryInSeconds: 'delayMs',
  fromState: 'from',
  path: 'file',
};

function sourceFiles(dir: string, out: string[] = []): string[] {
  for (const name of readdirSync(dir)) {
    const full = path.join(dir, name);
    if (statSync(full).isDirectory()) sourceFiles(full, out);
    else if (name.endsWith('.ts')) out.push(full);
  }
  return out;
}

function keysOf(node: ts.Expression, out: Set<string>): void {
  if (ts.isParenthesizedExpression(node)) return keysOf(node.expression, out);
  if (ts.isConditionalExpression(node)) {
    keysOf(node.whenTrue, out);
    keysOf(node.whenFalse, out);
    return;
  }
  if (!ts.isObjectLiteralExpression(node)) return;
  for (const p of node.properties) {
    if (ts.isSpreadAssignment(p)) keysOf(p.expression, out);
    else if (p.name && (ts.isIdentifier(p.name) || ts.isStringLiteral(p.name))) out.add(p.name.text);
  }
}

/** Field name -> where it is written (file:line). */
function fieldsInSource(): Map<string, string[]> {
  const found = new Map<string, string[]>();
  for (const file of sourceFiles(path.join(REPO, 'src'))) {
    const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true);
    const visit = (node: ts.Node): void => {
      if (ts.isCallExpression(node)) {
        const callee = node.expression;
        let fields: ts.Expression | undefined;
        if (ts.isPropertyAccessExpression(callee) && LEVEL_METHODS.has(callee.name.text)) fields = node.arguments[0];
        else if (ts.isPropertyAccessExpression(callee) && callee.name.text === 'transition') fields = node.arguments[3];
        else if (ts.isElementAccessExpression(callee) && /log/i.test(callee.expression.getText(source)))
          fields = node.arguments[0];
        if (fields) {
          const keys = new Set<string>();
          keysOf(fields, keys);
          const line = source.getLineAndCharacterOfPosition(node.getStart()).line + 1;
          for (const key of keys) found.set(key, [...(found.get(key) ?? []), `${path.relative(REPO, file)}:${line}`]);
        }
      }
      ts.forEachChild(node, visit);
    };
    visit(source);
  }
  return found;
}

function fieldsInDocs(): Set<string> {
  const doc = readFileSync(path.join(REPO, 'docs/logging.md'), 'utf8');
  const table = doc.slice(doc.indexOf('<!-- fields -->'), doc.indexOf('<!-- /fields -->'));
  const names = new Set<string>();
  for (const row of table.split('\n').filter((l) => l.startsWith('| `'))) {
    const first = row.split('|')[1] ?? '';
    for (const m of first.matchAll(/`([A-Za-z]+)`/g)) names.add(m[1]!);
  }
  return names;
}

const inSource = fieldsInSource();
const documented = fieldsInDocs();

t.test('the scan finds the log calls (a scan that finds nothing proves nothing)', async (t) => {
  for (const field of ['deploymentId', 'exitCode', 'durationMs', 'group', 'signalState', 'to', 'detail'])
    t.ok(inSource.has(field), field);
  t.ok(inSource.size > 80, `${inSource.size} field names`);
});

t.test('every field a log line carries is in the table of docs/logging.md', async (t) => {
  for (const [field, where] of inSource)
    t.ok(documented.has(field), `${field} (${where.slice(0, 3).join(', ')}) is documented`);
});

t.test('every field of the table is written somewhere', async (t) => {
  for (const field of documented) t.ok(inSource.has(field), `${field} is still used`);
});

t.test('retired names are gone: one name per thing', async (t) => {
  for (const [old, now] of Object.entries(RETIRED))
    t.notOk(inSource.has(old), `${old} (use ${now}): ${(inSource.get(old) ?? []).join(', ')}`);
});

// The logger redacts every field the one secret rule names (src/log/secret-names.ts); the agent's own fields that the
// rule names but that never hold a secret (metadata keys) are the documented exceptions, and only those.
t.test('no field of the agent is redacted by the secret rule, except the ones that would be', async (t) => {
  const flagged = [...documented].filter((field) => isSecretName(field)).sort();
  t.same(flagged, [...NOT_SECRET_FIELDS].sort(), 'the documented fields the rule names are the known exceptions');
  for (const field of documented) t.notOk(isSecretField(field), `${field} is written as it is`);
});
