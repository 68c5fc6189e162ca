import { promises as fs } from 'node:fs';
import { errorMessage, SourceNotConfiguredError, SourceUnavailableError } from '../errors.js';
import { redactUrl, setSecrets } from '../log/redact.js';
import { isJsonObject, shallowMerge, type JsonObject } from '../util/json-merge.js';
import { describeStackResourceUrl } from './cfn-signature.js';
import { explodeDeployments } from './explode-deployments.js';
import { sourceErrorFromHttp } from './source-error.js';
import type { CollectContext, Collector, CollectResult } from './types.js';

// `cfn`: heat-api-cfn's DescribeStackResource, signed with AWS signature v2, once per configured `path`
// (`Resource.Field[.key...]`). Each path's JSON object is merged shallowly over the previous ones and the result is
// exploded with [cfn] deployment_key, as upstream. Differences from upstream: every path gets a fresh signature (B3);
// a missing stack_name means "not configured" instead of a request that can never verify (B4); malformed XML, a
// missing element or a non-object value make the source unavailable instead of killing the daemon (B8); the signed
// URL never reaches a log line.

interface CfnSettings {
  metadataUrl: string;
  stackName: string;
  accessKeyId: string;
  secret: string;
  paths: Array<{ spec: string; resource: string; field: string; keys: string[] }>;
}

const HINT_MAX_BYTES = 4096;

export const cfnCollector: Collector = {
  name: 'cfn',
  async collect(ctx: CollectContext): Promise<CollectResult> {
    const settings = await settingsFrom(ctx);
    const cfg = ctx.config.cfn;
    let merged: JsonObject = {};
    // The endpoint without the signed query: enough for an operator, and short.
    const shown = redactUrl(settings.metadataUrl.replace(/[?#].*$/, ''));
    for (const p of settings.paths) {
      const url = describeStackResourceUrl(settings.metadataUrl, {
        stackName: settings.stackName,
        resource: p.resource,
        accessKeyId: settings.accessKeyId,
        secret: settings.secret,
      });
      let res;
      try {
        res = await ctx.http.request({
          url,
          headers: { 'content-type': 'application/json' },
          timeoutSeconds: cfg.timeout,
          signal: ctx.signal,
          ...(cfg.ca_certificate ? { caFile: cfg.ca_certificate } : {}),
        });
      } catch (err) {
        throw unavailableFrom(err, p.spec, shown);
      }
      if (res.statusCode === 403 || res.statusCode === 401) {
        throw new SourceUnavailableError(
          'cfn',
          `heat-api-cfn at ${shown} refused the request (${res.statusCode}); check [cfn] access_key_id and secret_access_key`,
          { code: 'ERR_HTTP', statusCode: res.statusCode },
        );
      }
      if (res.statusCode < 200 || res.statusCode > 299) {
        throw new SourceUnavailableError('cfn', `heat-api-cfn at ${shown} answered ${res.statusCode} for ${p.spec}`, {
          code: 'ERR_HTTP',
          statusCode: res.statusCode,
        });
      }
      merged = shallowMerge(merged, extractMetadata(res.body.toString('utf8'), p, shown));
    }
    return { pairs: explodeDeployments('cfn', merged, cfg.deployment_key, ctx.log) };
  },
};

function unavailableFrom(err: unknown, spec: string, shown: string): SourceUnavailableError {
  const message = (reason: string): string => `request for ${spec} to heat-api-cfn at ${shown} failed: ${reason}`;
  return (
    sourceErrorFromHttp('cfn', err, { message }) ??
    new SourceUnavailableError('cfn', message(errorMessage(err)), { code: 'ERR_HTTP', cause: err })
  );
}

function notConfigured(message: string): SourceNotConfiguredError {
  return new SourceNotConfiguredError('cfn', message);
}

async function settingsFrom(ctx: CollectContext): Promise<CfnSettings> {
  const cfg = ctx.config.cfn;
  const metadataUrl = cfg.metadata_url || (await urlFromHint(cfg.heat_metadata_hint, ctx));
  if (!metadataUrl) throw notConfigured('no [cfn] metadata_url and no heat_metadata_hint file');
  if (!cfg.access_key_id) throw notConfigured('no [cfn] access_key_id');
  if (!cfg.secret_access_key) throw notConfigured('no [cfn] secret_access_key');
  // Replaced when [cfn] is reconfigured: the old key is no longer scrubbed unless the configuration still holds it.
  setSecrets('collector-cfn', [cfg.secret_access_key]);
  if (cfg.path.length === 0) throw notConfigured('no [cfn] path');
  if (!cfg.stack_name)
    throw notConfigured('no [cfn] stack_name (upstream signed the text "None" and was always refused)');
  try {
    new URL(metadataUrl);
  } catch {
    throw notConfigured(`[cfn] metadata_url ${redactUrl(metadataUrl)} is not a URL`);
  }
  const paths: CfnSettings['paths'] = [];
  for (const spec of cfg.path) {
    const [resource, field, ...keys] = spec.split('.');
    if (!resource || !field) {
      ctx.log.error({ cfnPath: spec }, 'cfn path must look like Resource.Metadata[.key...]');
      throw notConfigured(`[cfn] path "${spec}" is not of the form Resource.Field[.key...]`);
    }
    paths.push({ spec, resource, field, keys });
  }
  return {
    metadataUrl,
    stackName: cfg.stack_name,
    accessKeyId: cfg.access_key_id,
    secret: cfg.secret_access_key,
    paths,
  };
}

/** The hint file names the CFN server; upstream appends /v1/ to its trimmed contents. */
async function urlFromHint(hint: string, ctx: CollectContext): Promise<string | undefined> {
  if (!hint) return undefined;
  let text: string;
  try {
    const st = await fs.stat(hint);
    if (!st.isFile() || st.size > HINT_MAX_BYTES) {
      ctx.log.warn({ file: hint }, 'heat_metadata_hint is not a small regular file; ignored');
      return undefined;
    }
    text = (await fs.readFile(hint, 'utf8')).trim();
  } catch {
    return undefined;
  }
  if (!text) return undefined;
  return `${text.replace(/\/+$/, '')}/v1/`;
}

/** DescribeStackResourceResult/StackResourceDetail/<field> text, parsed as JSON, descended by keys; must be an object. */
export function extractMetadata(
  xml: string,
  p: { spec: string; field: string; keys: readonly string[] },
  shown: string,
): JsonObject {
  let root: XmlElement;
  try {
    root = parseXml(xml);
  } catch (err) {
    throw new SourceUnavailableError(
      'cfn',
      `heat-api-cfn at ${shown} returned malformed XML (${(err as Error).message})`,
      { code: 'ERR_SOURCE_INVALID_DATA' },
    );
  }
  const detail = child(child(root, 'DescribeStackResourceResult'), 'StackResourceDetail');
  const fieldEl = child(detail, p.field);
  if (!fieldEl)
    throw new SourceUnavailableError('cfn', `path ${p.spec} does not exist in the response from ${shown}`, {
      code: 'ERR_SOURCE_INVALID_DATA',
    });
  let value: unknown;
  try {
    value = JSON.parse(fieldEl.text);
  } catch {
    throw new SourceUnavailableError('cfn', `${p.field} of ${p.spec} is not valid JSON`, {
      code: 'ERR_SOURCE_INVALID_DATA',
    });
  }
  for (const key of p.keys) {
    if (!isJsonObject(value) || !Object.prototype.hasOwnProperty.call(value, key)) {
      throw new SourceUnavailableError('cfn', `path ${p.spec} does not exist: no key "${key}"`, {
        code: 'ERR_SOURCE_INVALID_DATA',
      });
    }
    value = value[key];
  }
  if (!isJsonObject(value))
    throw new SourceUnavailableError('cfn', `${p.spec} is not a JSON object`, { code: 'ERR_SOURCE_INVALID_DATA' });
  return value;
}

// A small, strict XML reader for the one response shape heat-api-cfn sends: elements, attributes, text, CDATA,
// comments, processing instructions and the five predefined plus numeric entities. DOCTYPEs are refused (no entity
// expansion), as is anything not well-formed.

export interface XmlElement {
  readonly name: string;
  readonly children: XmlElement[];
  /** Concatenated character data directly inside the element. */
  text: string;
}

const MAX_XML_DEPTH = 64;
const NAME = /[A-Za-z_:][-A-Za-z0-9_:.]*/y;

function child(el: XmlElement | undefined, name: string): XmlElement | undefined {
  // Element names are matched without any namespace prefix, as upstream's un-namespaced find() effectively did.
  return el?.children.find((c) => c.name === name || c.name.endsWith(`:${name}`));
}

export function parseXml(xml: string): XmlElement {
  let i = xml.charCodeAt(0) === 0xfeff ? 1 : 0;
  const fail = (what: string): never => {
    throw new Error(`${what} at offset ${i}`);
  };
  const skipMisc = () => {
    for (;;) {
      while (i < xml.length && /\s/.test(xml[i]!)) i++;
      if (xml.startsWith('<?', i)) {
        const end = xml.indexOf('?>', i + 2);
        if (end === -1) fail('unterminated processing instruction');
        i = end + 2;
      } else if (xml.startsWith('<!--', i)) {
        const end = xml.indexOf('-->', i + 4);
        if (end === -1) fail('unterminated comment');
        i = end + 3;
      } else if (xml.startsWith('<!', i) && !xml.startsWith('<![CDATA[', i)) {
        fail('DOCTYPE and declarations are not accepted');
      } else return;
    }
  };
  const readName = (): string => {
    NAME.lastIndex = i;
    const m = NAME.exec(xml);
    if (!m) fail('expected a name');
    i += m![0].length;
    return m![0];
  };
  const decode = (raw: string): string =>
    raw.replace(/&([^;&\s]{1,10});/g, (whole, ent: string) => {
      switch (ent) {
        case 'lt':
          return '<';
        case 'gt':
          return '>';
        case 'amp':
          return '&';
        case 'quot':
          return '"';
        case 'apos':
          return "'";
      }
      const code = /^#x[0-9a-fA-F]+$/.test(ent)
        ? parseInt(ent.slice(2), 16)
        : /^#[0-9]+$/.test(ent)
          ? parseInt(ent.slice(1), 10)
          : NaN;
      if (!Number.isFinite(code) || code > 0x10ffff || code === 0) throw new Error(`unknown entity ${whole}`);
      return String.fromCodePoint(code);
    });
  const checkText = (raw: string): string => {
    if (/&(?![^;&\s]{1,10};)/.test(raw)) fail('bare "&" in text');
    return decode(raw);
  };

  const parseElement = (depth: number): XmlElement => {
    if (depth > MAX_XML_DEPTH) fail('elements nested too deeply');
    if (xml[i] !== '<') fail('expected an element');
    i++;
    const name = readName();
    // Attributes are skipped (none matter here) but must be well-formed.
    for (;;) {
      const before = i;
      while (i < xml.length && /\s/.test(xml[i]!)) i++;
      if (xml.startsWith('/>', i)) {
        i += 2;
        return { name, children: [], text: '' };
      }
      if (xml[i] === '>') {
        i++;
        break;
      }
      if (i === before) fail('expected whitespace before an attribute');
      readName();
      while (/\s/.test(xml[i] ?? '')) i++;
      if (xml[i] !== '=') fail('expected "=" after an attribute name');
      i++;
      while (/\s/.test(xml[i] ?? '')) i++;
      const quote = xml[i];
      if (quote !== '"' && quote !== "'") fail('expected a quoted attribute value');
      const end = xml.indexOf(quote!, i + 1);
      if (end === -1) fail('unterminated attribute value');
      const value = xml.slice(i + 1, end);
      if (value.includes('<')) fail('"<" in an attribute value');
      checkText(value);
      i = end + 1;
    }
    const el: XmlElement = { name, children: [], text: '' };
    for (;;) {
      if (i >= xml.length) fail(`unclosed element <${name}>`);
      const lt = xml.indexOf('<', i);
      if (lt === -1) fail(`unclosed element <${name}>`);
      if (lt > i) {
        el.text += checkText(xml.slice(i, lt));
        i = lt;
      }
      if (xml.startsWith('</', i)) {
        i += 2;
        const closing = readName();
        if (closing !== name) fail(`</${closing}> closes <${name}>`);
        while (/\s/.test(xml[i] ?? '')) i++;
        if (xml[i] !== '>') fail('expected ">"');
        i++;
        return el;
      }
      if (xml.startsWith('<![CDATA[', i)) {
        const end = xml.indexOf(']]>', i + 9);
        if (end === -1) fail('unterminated CDATA');
        el.text += xml.slice(i + 9, end);
        i = end + 3;
      } else if (xml.startsWith('<!--', i)) {
        const end = xml.indexOf('-->', i + 4);
        if (end === -1) fail('unterminated comment');
        i = end + 3;
      } else if (xml.startsWith('<?', i)) {
        const end = xml.indexOf('?>', i + 2);
        if (end === -1) fail('unterminated processing instruction');
        i = end + 2;
      } else if (xml.startsWith('<!', i)) {
        fail('declarations are not accepted inside elements');
      } else {
        el.children.push(parseElement(depth + 1));
      }
    }
  };

  skipMisc();
  const root = parseElement(0);
  skipMisc();
  if (i < xml.length) fail('content after the root element');
  return root;
}
