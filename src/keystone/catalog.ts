import { KeystoneError } from './keystone-error.js';

// The service catalog of a Keystone v3 token, as read from a login answer or from the token cache: both are
// untrusted input, so entries of any other shape are dropped rather than trusted.

export interface CatalogEndpoint {
  readonly interface: string;
  readonly region?: string;
  readonly region_id?: string;
  readonly url: string;
}

export interface CatalogEntry {
  readonly type: string;
  readonly endpoints: readonly CatalogEndpoint[];
}

export interface KeystoneToken {
  readonly token: string;
  readonly expiresAt: number;
  readonly catalog: readonly CatalogEntry[];
}

export function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Catalog entries of the expected shape; anything else is dropped (a missing service is reported by findEndpoint). */
export function validCatalog(value: unknown): CatalogEntry[] {
  if (!Array.isArray(value)) return [];
  const out: CatalogEntry[] = [];
  for (const entry of value) {
    if (!isObject(entry) || typeof entry.type !== 'string' || !Array.isArray(entry.endpoints)) continue;
    const endpoints: CatalogEndpoint[] = [];
    for (const ep of entry.endpoints) {
      if (!isObject(ep) || typeof ep.url !== 'string' || typeof ep.interface !== 'string') continue;
      endpoints.push({
        interface: ep.interface,
        url: ep.url,
        ...(typeof ep.region === 'string' ? { region: ep.region } : {}),
        ...(typeof ep.region_id === 'string' ? { region_id: ep.region_id } : {}),
      });
    }
    out.push({ type: entry.type, endpoints });
  }
  return out;
}

/**
 * Endpoint URL of a service from the catalog: type, interface public (upstream "publicURL"), and region when one is
 * given. A region of "null" or "None" (Heat rendered `region_name: null` into configs) counts as no region.
 */
export function findEndpoint(catalog: readonly CatalogEntry[], type: string, region?: string): string {
  const wantRegion = region && region !== 'null' && region !== 'None' ? region : undefined;
  for (const entry of catalog) {
    if (entry.type !== type) continue;
    for (const ep of entry.endpoints) {
      if (ep.interface !== 'public') continue;
      if (wantRegion && ep.region !== wantRegion && ep.region_id !== wantRegion) continue;
      return ep.url.replace(/\/+$/, '');
    }
  }
  throw new KeystoneError(
    `no public "${type}" endpoint${wantRegion ? ` in region ${wantRegion}` : ''} in the Keystone catalog`,
  );
}
