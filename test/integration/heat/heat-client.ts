import { passwordToken, type Token } from './identity.js';

// The test's side of Heat: the native REST API as the `admin` user (heat_stack_owner on project admin), for creating,
// updating, deleting and inspecting stacks. Plain fetch against 127.0.0.1; no CLI start-up cost per call.

export interface Stack {
  id: string;
  stack_name: string;
  stack_status: string;
  stack_status_reason: string;
  outputs?: Array<{ output_key: string; output_value: unknown; output_error?: string }>;
}

export interface HeatEvent {
  resource_name: string;
  resource_status: string;
  resource_status_reason: string;
  event_time: string;
}

export interface SoftwareDeploymentRecord {
  id: string;
  action: string;
  status: string;
  status_reason: string;
  output_values: Record<string, unknown> | null;
  input_values: Record<string, unknown> | null;
}

const TERMINAL = /_(COMPLETE|FAILED)$/;

export class HeatClient {
  private token: Token | undefined;
  /** name -> "name/id": Heat resolves a bare name only on some routes. */
  private readonly refs = new Map<string, string>();

  constructor(
    private readonly keystoneUrl: string,
    private readonly adminPassword: string,
    private readonly apiPort: number,
  ) {}

  private async auth(): Promise<Token> {
    if (!this.token || this.token.expiresAt - Date.now() < 5 * 60_000) {
      this.token = await passwordToken(this.keystoneUrl, {
        user: 'admin',
        password: this.adminPassword,
        project: 'admin',
      });
    }
    return this.token;
  }

  /** One call to /v1/<project>/<path>; returns status and parsed body (redirects to name/id URLs are followed). */
  async call(method: string, path: string, body?: unknown): Promise<{ status: number; body: unknown }> {
    const token = await this.auth();
    const res = await fetch(`http://127.0.0.1:${this.apiPort}/v1/${token.projectId}${path}`, {
      method,
      headers: { 'x-auth-token': token.id, 'content-type': 'application/json', accept: 'application/json' },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
      signal: AbortSignal.timeout(60_000),
    });
    const text = await res.text();
    let parsed: unknown = text;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      // not JSON: keep the text for the error message
    }
    return { status: res.status, body: parsed };
  }

  private async ok(method: string, path: string, body?: unknown): Promise<Record<string, unknown>> {
    const res = await this.call(method, path, body);
    if (res.status < 200 || res.status > 299)
      throw new Error(`Heat ${method} ${path}: ${res.status} ${JSON.stringify(res.body).slice(0, 500)}`);
    return (res.body ?? {}) as Record<string, unknown>;
  }

  async createStack(
    name: string,
    template: string,
    parameters: Record<string, unknown>,
    timeoutMins = 10,
  ): Promise<string> {
    const out = await this.ok('POST', '/stacks', {
      stack_name: name,
      template,
      parameters,
      timeout_mins: timeoutMins,
      disable_rollback: true,
    });
    const id = (out.stack as { id: string }).id;
    this.refs.set(name, `${encodeURIComponent(name)}/${id}`);
    return id;
  }

  private async ref(name: string): Promise<string> {
    const known = this.refs.get(name);
    if (known) return known;
    const s = await this.stack(name);
    if (!s) throw new Error(`Heat has no stack ${name}`);
    const ref = `${encodeURIComponent(name)}/${s.id}`;
    this.refs.set(name, ref);
    return ref;
  }

  async stack(name: string): Promise<Stack | undefined> {
    const res = await this.call('GET', `/stacks/${encodeURIComponent(name)}`);
    if (res.status === 404) return undefined;
    if (res.status !== 200)
      throw new Error(`Heat GET stack ${name}: ${res.status} ${JSON.stringify(res.body).slice(0, 300)}`);
    return (res.body as { stack: Stack }).stack;
  }

  /**
   * Polls until the stack's status is `<action>_COMPLETE` or `<action>_FAILED` (or, for DELETE, the stack is gone:
   * undefined), at most `timeoutMs`. Waiting for the action, not any terminal state, skips the previous action's.
   */
  async waitFor(
    name: string,
    action: 'CREATE' | 'UPDATE' | 'DELETE',
    timeoutMs: number,
    intervalMs = 250,
  ): Promise<Stack | undefined> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const s = await this.stack(name);
      if (!s) {
        if (action === 'DELETE') return undefined;
        throw new Error(`stack ${name} disappeared while waiting for ${action}`);
      }
      if (s.stack_status.startsWith(`${action}_`) && TERMINAL.test(s.stack_status)) return s;
      if (Date.now() > deadline)
        throw new Error(
          `stack ${name} still ${s.stack_status} after ${timeoutMs} ms waiting for ${action}: ${s.stack_status_reason}`,
        );
      await new Promise((r) => setTimeout(r, intervalMs));
    }
  }

  /** Polls until `resource` of the stack reaches CREATE_COMPLETE. */
  async waitResource(name: string, resource: string, timeoutMs: number): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const res = await this.call('GET', `/stacks/${await this.ref(name)}/resources/${encodeURIComponent(resource)}`);
      const status =
        res.status === 200
          ? (res.body as { resource: { resource_status: string; resource_status_reason: string } }).resource
          : undefined;
      if (status?.resource_status === 'CREATE_COMPLETE') return;
      if (status?.resource_status.endsWith('FAILED'))
        throw new Error(`resource ${resource} of ${name} failed: ${status.resource_status_reason}`);
      if (Date.now() > deadline)
        throw new Error(
          `resource ${resource} of ${name} not CREATE_COMPLETE after ${timeoutMs} ms (${status?.resource_status ?? res.status})`,
        );
      await new Promise((r) => setTimeout(r, 250));
    }
  }

  async resourceMetadata(name: string, resource: string): Promise<Record<string, unknown>> {
    const out = await this.ok(
      'GET',
      `/stacks/${await this.ref(name)}/resources/${encodeURIComponent(resource)}/metadata`,
    );
    return out.metadata as Record<string, unknown>;
  }

  async resourceId(name: string, resource: string): Promise<string> {
    const out = await this.ok('GET', `/stacks/${await this.ref(name)}/resources/${encodeURIComponent(resource)}`);
    return (out.resource as { physical_resource_id: string }).physical_resource_id;
  }

  async events(name: string, resource: string): Promise<HeatEvent[]> {
    const out = await this.ok(
      'GET',
      `/stacks/${await this.ref(name)}/resources/${encodeURIComponent(resource)}/events?limit=200`,
    );
    return out.events as HeatEvent[];
  }

  async softwareDeployment(id: string): Promise<SoftwareDeploymentRecord> {
    const out = await this.ok('GET', `/software_deployments/${encodeURIComponent(id)}`);
    return out.software_deployment as SoftwareDeploymentRecord;
  }

  /** Stack update keeping the template and other parameters (PATCH, as `openstack stack update --existing`). */
  async updateParameters(name: string, parameters: Record<string, unknown>): Promise<void> {
    await this.ok('PATCH', `/stacks/${await this.ref(name)}`, { parameters });
  }

  async deleteStack(name: string): Promise<void> {
    const s = await this.stack(name);
    if (!s) return;
    const res = await this.call('DELETE', `/stacks/${encodeURIComponent(name)}/${s.id}`);
    if (res.status !== 204 && res.status !== 404) throw new Error(`Heat DELETE stack ${name}: ${res.status}`);
  }
}

/** A stack's outputs as a plain object. */
export function outputsOf(stack: Stack): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const o of stack.outputs ?? [])
    out[o.output_key] = o.output_error !== undefined ? { error: o.output_error } : o.output_value;
  return out;
}
