import { promises as fs } from 'node:fs';
import { errorMessage, SourceNotConfiguredError, SourceUnavailableError } from '../errors.js';
import { redactUrl, setSecrets } from '../log/redact.js';
import { shallowMerge, type JsonObject } from '../util/json-merge.js';
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
      const { extractMetadata } = await import('./cfn-response.js');
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
      ctx.log.error({ path: spec }, 'cfn path must look like Resource.Metadata[.key...]');
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
