// Keystone v3 REST calls the harness needs: password tokens, and creating the identity objects Heat relies on
// (service project and user, the orchestration, cloudformation and compute-stub endpoints, the `heat` domain for stack users
// with its admin, the heat_stack_owner / heat_stack_user roles). Plain fetch against 127.0.0.1.

export interface Token {
  readonly id: string;
  readonly projectId: string | undefined;
  readonly userId: string;
  readonly expiresAt: number;
}

export interface PasswordAuth {
  readonly user: string;
  readonly password: string;
  readonly userDomain?: string;
  /** Project scope (in the Default domain unless projectDomain says otherwise). */
  readonly project?: string;
  readonly projectDomain?: string;
  /** Domain scope instead of a project. */
  readonly domain?: string;
}

export async function passwordToken(keystoneUrl: string, auth: PasswordAuth): Promise<Token> {
  const scope = auth.domain
    ? { domain: { name: auth.domain } }
    : auth.project
      ? { project: { name: auth.project, domain: { name: auth.projectDomain ?? 'Default' } } }
      : undefined;
  const body = {
    auth: {
      identity: {
        methods: ['password'],
        password: {
          user: { name: auth.user, password: auth.password, domain: { name: auth.userDomain ?? 'Default' } },
        },
      },
      ...(scope ? { scope } : {}),
    },
  };
  const res = await fetch(`${keystoneUrl}/auth/tokens`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(30_000),
  });
  const text = await res.text();
  if (res.status !== 201)
    throw new Error(`Keystone refused a token for ${auth.user}: ${res.status} ${text.slice(0, 300)}`);
  const parsed = JSON.parse(text) as { token: { expires_at: string; project?: { id: string }; user: { id: string } } };
  return {
    id: res.headers.get('x-subject-token') ?? '',
    projectId: parsed.token.project?.id,
    userId: parsed.token.user.id,
    expiresAt: Date.parse(parsed.token.expires_at),
  };
}

export class IdentityAdmin {
  constructor(
    private readonly keystoneUrl: string,
    private readonly token: string,
  ) {}

  async call(method: string, path: string, body?: unknown): Promise<Record<string, unknown>> {
    const res = await fetch(`${this.keystoneUrl}${path}`, {
      method,
      headers: { 'x-auth-token': this.token, 'content-type': 'application/json' },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
      signal: AbortSignal.timeout(30_000),
    });
    const text = await res.text();
    if (res.status >= 300) throw new Error(`Keystone ${method} ${path}: ${res.status} ${text.slice(0, 300)}`);
    return text ? (JSON.parse(text) as Record<string, unknown>) : {};
  }

  private async create(collection: string, kind: string, attributes: Record<string, unknown>): Promise<string> {
    const out = await this.call('POST', `/${collection}`, { [kind]: attributes });
    return (out[kind] as { id: string }).id;
  }

  async findId(collection: string, name: string): Promise<string> {
    const out = await this.call('GET', `/${collection}?name=${encodeURIComponent(name)}`);
    const list = out[collection] as Array<{ id: string }>;
    if (!list[0]) throw new Error(`Keystone has no ${collection} named ${name}`);
    return list[0].id;
  }

  project(name: string, domainId = 'default'): Promise<string> {
    return this.create('projects', 'project', { name, domain_id: domainId, enabled: true });
  }
  domain(name: string): Promise<string> {
    return this.create('domains', 'domain', { name, enabled: true });
  }
  user(name: string, password: string, domainId = 'default', defaultProjectId?: string): Promise<string> {
    return this.create('users', 'user', {
      name,
      password,
      domain_id: domainId,
      enabled: true,
      ...(defaultProjectId ? { default_project_id: defaultProjectId } : {}),
    });
  }
  role(name: string): Promise<string> {
    return this.create('roles', 'role', { name });
  }
  async grantOnProject(projectId: string, userId: string, roleId: string): Promise<void> {
    await this.call('PUT', `/projects/${projectId}/users/${userId}/roles/${roleId}`);
  }
  async grantOnDomain(domainId: string, userId: string, roleId: string): Promise<void> {
    await this.call('PUT', `/domains/${domainId}/users/${userId}/roles/${roleId}`);
  }
  async serviceWithEndpoints(type: string, name: string, url: string, region = 'RegionOne'): Promise<void> {
    const serviceId = await this.create('services', 'service', { type, name, enabled: true });
    for (const iface of ['public', 'internal', 'admin']) {
      await this.create('endpoints', 'endpoint', {
        service_id: serviceId,
        interface: iface,
        url,
        region_id: region,
        enabled: true,
      });
    }
  }
}

export interface HeatIdentity {
  readonly heatPassword: string;
  readonly domainAdminPassword: string;
}

/** The users, roles, domain and endpoints Heat needs (Keystone already bootstrapped with admin/admin). */
export async function createHeatIdentity(
  keystoneUrl: string,
  adminPassword: string,
  ports: { api: number; cfn: number; computeUrl: string; swiftUrl?: string | undefined },
  secrets: HeatIdentity,
): Promise<void> {
  const admin = await passwordToken(keystoneUrl, { user: 'admin', password: adminPassword, project: 'admin' });
  const id = new IdentityAdmin(keystoneUrl, admin.id);
  const adminRole = await id.findId('roles', 'admin');
  const service = await id.project('service');
  const heat = await id.user('heat', secrets.heatPassword, 'default', service);
  await id.grantOnProject(service, heat, adminRole);
  await id.serviceWithEndpoints('orchestration', 'heat', `http://127.0.0.1:${ports.api}/v1/%(tenant_id)s`);
  await id.serviceWithEndpoints('cloudformation', 'heat-cfn', `http://127.0.0.1:${ports.cfn}/v1`);
  // The compute stub (see compute-stub.ts): Heat looks servers up there while deleting deployments.
  await id.serviceWithEndpoints('compute', 'nova', ports.computeUrl);
  if (ports.swiftUrl) await id.serviceWithEndpoints('object-store', 'swift', `${ports.swiftUrl}/v1/AUTH_%(tenant_id)s`);
  const heatDomain = await id.domain('heat');
  const domainAdmin = await id.user('heat_domain_admin', secrets.domainAdminPassword, heatDomain);
  await id.grantOnDomain(heatDomain, domainAdmin, adminRole);
  const owner = await id.role('heat_stack_owner');
  await id.role('heat_stack_user');
  const adminProject = await id.findId('projects', 'admin');
  await id.grantOnProject(adminProject, admin.userId, owner);
}
