import { randomBytes } from 'node:crypto';
import dgram from 'node:dgram';
import { appendFileSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { SERVICE_ENV } from './keystone.js';
import { answersHttp, freePort, runStep, startService, waitUntil, type Service } from './processes.js';

// Swift from Debian's packages for the POLL_TEMP_URL / TEMP_URL_SIGNAL transports: one-replica rings over one
// directory-backed device, account, container and object servers and a proxy with tempurl + Keystone auth, all on
// 127.0.0.1 with free ports. Every server runs single-process (workers = 0) and reads swift.conf, rings and devices
// from the harness's directory (set_swift_dir before the server starts; the packaged launchers always read
// /etc/swift/swift.conf).

export interface Swift {
  /** http://127.0.0.1:PORT — object-store endpoints are <url>/v1/AUTH_%(tenant_id)s. */
  readonly url: string;
  /** Closes the log sink (the servers are stopped through the `services` list the caller passed). */
  close(): Promise<void>;
}

export interface SwiftSetup {
  readonly dir: string;
  readonly keystoneUrl: string;
  /** Service credentials for the proxy's authtoken middleware. */
  readonly serviceUser: string;
  readonly servicePassword: string;
}

const SERVERS = ['account', 'container', 'object'] as const;

function launcher(swiftDir: string, conf: string, app: string): string[] {
  // The same calls the packaged swift-*-server scripts make, after pointing swift at the private directory.
  const code = [
    'import sys',
    'from swift.common import utils',
    `utils.set_swift_dir(${JSON.stringify(swiftDir)})`,
    'from swift.common.wsgi import run_wsgi',
    app === 'object-server' ? 'from swift.obj import server as objserver' : '',
    `sys.exit(run_wsgi(${JSON.stringify(conf)}, ${JSON.stringify(app)}${app === 'object-server' ? ', global_conf_callback=objserver.global_conf_callback' : ''}))`,
  ].filter(Boolean);
  return ['-c', code.join('\n')];
}

/** Starts the Swift servers; each is pushed onto `services` as soon as it starts, so the caller can stop them even on failure. */
export async function startSwift(setup: SwiftSetup, services: Service[]): Promise<Swift> {
  const swiftDir = path.join(setup.dir, 'swift');
  const devices = path.join(swiftDir, 'node');
  mkdirSync(path.join(devices, 'd1'), { recursive: true });
  const env = { ...SERVICE_ENV, HOME: setup.dir };
  writeFileSync(
    path.join(swiftDir, 'swift.conf'),
    `[swift-hash]\nswift_hash_path_suffix = ${randomBytes(8).toString('hex')}\nswift_hash_path_prefix = ${randomBytes(8).toString('hex')}\n[storage-policy:0]\nname = Policy-0\ndefault = yes\n`,
  );
  const ports: Record<(typeof SERVERS)[number] | 'proxy', number> = {
    account: await freePort(),
    container: await freePort(),
    object: await freePort(),
    proxy: await freePort(),
  };
  for (const kind of SERVERS) {
    const builder = path.join(swiftDir, `${kind}.builder`);
    const ring = (name: string, args: string[]) =>
      runStep({
        name: `swift-ring-builder ${kind} ${name}`,
        command: 'swift-ring-builder',
        args: [builder, ...args],
        logFile: path.join(setup.dir, 'swift-rings.log'),
        env,
        cwd: swiftDir,
        timeoutMs: 60_000,
      });
    await ring('create', ['create', '6', '1', '1']);
    await ring('add', ['add', `r1z1-127.0.0.1:${ports[kind]}/d1`, '100']);
    await ring('rebalance', ['rebalance']);
  }
  // Swift logs only through syslog; a loopback UDP sink in this process writes its lines to swift.log.
  const sink = dgram.createSocket('udp4');
  const sinkLog = path.join(setup.dir, 'swift.log');
  sink.on('message', (msg) => appendFileSync(sinkLog, `${msg.toString().replace(/\n?$/, '\n')}`));
  await new Promise<void>((resolve) => sink.bind(0, '127.0.0.1', resolve));
  const close = () => new Promise<void>((resolve) => sink.close(() => resolve()));
  try {
    return await startServers();
  } catch (err) {
    await close();
    throw err;
  }

  async function startServers(): Promise<Swift> {
    const common = (port: number) => [
      '[DEFAULT]',
      'bind_ip = 127.0.0.1',
      `bind_port = ${port}`,
      `swift_dir = ${swiftDir}`,
      'workers = 0',
      'log_level = INFO',
      'log_udp_host = 127.0.0.1',
      `log_udp_port = ${sink.address().port}`,
      `devices = ${devices}`,
      'mount_check = false',
      'disable_fallocate = true',
    ];
    for (const kind of SERVERS) {
      const conf = path.join(swiftDir, `${kind}-server.conf`);
      writeFileSync(
        conf,
        [
          ...common(ports[kind]),
          '[pipeline:main]',
          `pipeline = ${kind}-server`,
          `[app:${kind}-server]`,
          `use = egg:swift#${kind}`,
          '',
        ].join('\n'),
      );
      services.push(
        startService({
          name: `swift-${kind}`,
          command: '/usr/bin/python3',
          args: launcher(swiftDir, conf, `${kind}-server`),
          logFile: path.join(setup.dir, `swift-${kind}.log`),
          env,
          cwd: swiftDir,
        }),
      );
    }
    const keystoneRoot = setup.keystoneUrl.replace(/\/v3\/?$/, '');
    const proxyConf = path.join(swiftDir, 'proxy-server.conf');
    writeFileSync(
      proxyConf,
      [
        ...common(ports.proxy),
        '[pipeline:main]',
        'pipeline = catch_errors gatekeeper healthcheck proxy-logging listing_formats tempurl authtoken keystoneauth copy slo dlo proxy-logging proxy-server',
        '[app:proxy-server]',
        'use = egg:swift#proxy',
        'account_autocreate = true',
        '[filter:authtoken]',
        'paste.filter_factory = keystonemiddleware.auth_token:filter_factory',
        `www_authenticate_uri = ${setup.keystoneUrl}`,
        `auth_url = ${keystoneRoot}`,
        'auth_type = password',
        `username = ${setup.serviceUser}`,
        `password = ${setup.servicePassword}`,
        'project_name = service',
        'user_domain_name = Default',
        'project_domain_name = Default',
        // TempURL requests carry no token: authorization is decided later, by tempurl.
        'delay_auth_decision = true',
        '[filter:keystoneauth]',
        'use = egg:swift#keystoneauth',
        'operator_roles = admin, member',
        ...[
          'catch_errors',
          'gatekeeper',
          'healthcheck',
          'proxy-logging',
          'listing_formats',
          'tempurl',
          'copy',
          'slo',
          'dlo',
        ].flatMap((f) => [`[filter:${f}]`, `use = egg:swift#${f.replace('-', '_')}`]),
        '',
      ].join('\n'),
    );
    const proxy = startService({
      name: 'swift-proxy',
      command: '/usr/bin/python3',
      args: launcher(swiftDir, proxyConf, 'proxy-server'),
      logFile: path.join(setup.dir, 'swift-proxy.log'),
      env,
      cwd: swiftDir,
    });
    services.push(proxy);
    const url = `http://127.0.0.1:${ports.proxy}`;
    await waitUntil(
      'the Swift proxy to answer',
      async () => (await fetch(`${url}/healthcheck`, { signal: AbortSignal.timeout(5000) })).ok,
      60_000,
      proxy,
    );
    for (const kind of SERVERS) {
      await waitUntil(
        `swift ${kind} server to answer`,
        () => answersHttp(`http://127.0.0.1:${ports[kind]}/healthcheck`),
        60_000,
        services.find((s) => s.name === `swift-${kind}`),
      );
    }
    return { url, close };
  }
}
