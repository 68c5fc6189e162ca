import type { HttpClient } from '../../http/types.js';
import {
  KeystoneError,
  rememberedSession,
  type KeystoneMemory,
  type KeystoneSession,
} from '../../keystone/keystone-client.js';
import { classifySignalStatus } from '../engine/backoff.js';
import type { KeystoneInputs } from '../../heat/signal-target.js';
import type { Delivery } from './delivery.js';

// HEAT_SIGNAL and ZAQAR_SIGNAL log in to Keystone with each deployment's stack-domain user. Sessions are kept per
// user for the life of the process, so a burst of deployments (and retries) reuses one token per user.

const MAX_USERS = 64;
const memories = new Map<string, KeystoneMemory>();

export function keystoneSessionFor(http: HttpClient, creds: KeystoneInputs, timeoutSeconds: number): KeystoneSession {
  const key = JSON.stringify([creds.authUrl, creds.userId, creds.projectId]);
  let memory = memories.get(key);
  if (!memory) {
    if (memories.size >= MAX_USERS) {
      const oldest = memories.keys().next().value as string;
      memories.get(oldest)?.keystone?.session.close();
      memories.delete(oldest);
    }
    memory = {};
    memories.set(key, memory);
  }
  return rememberedSession(
    memory,
    http,
    { authUrl: creds.authUrl, userId: creds.userId, password: creds.password, projectId: creds.projectId },
    { timeoutSeconds },
  );
}

/**
 * A failed login as a delivery outcome: credentials refused (401/403, e.g. the stack and its user were deleted) or
 * another 4xx is final; an unreachable Keystone or a 5xx is worth retrying.
 */
export function loginFailure(err: unknown, what: string): Delivery {
  const message = err instanceof Error ? err.message : String(err);
  const status = err instanceof KeystoneError ? err.statusCode : undefined;
  if (status !== undefined && classifySignalStatus(status) === 'final')
    return { outcome: 'final', status, error: `${what}: ${message}` };
  return { outcome: 'retry', error: `${what}: ${message}` };
}
