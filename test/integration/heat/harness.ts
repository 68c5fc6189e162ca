import { randomBytes } from 'node:crypto';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { startComputeStub, type ComputeStub } from './compute-stub.js';
import { startEc2Bridge, type Ec2Bridge } from './ec2-bridge.js';
import { startHeat, syncHeatDatabase, writeHeatConf } from './heat-service.js';
import { createHeatIdentity } from './identity.js';
import { startKeystone } from './keystone.js';
import { startPostgres } from './postgres.js';
import { freePort, type Service } from './processes.js';
import { startSwift, type Swift } from './swift.js';

// Real OpenStack Heat and Keystone on this machine for integration tests, from Debian's packages (install them with
// test/integration/heat/install.sh): a private PostgreSQL, Keystone, the ec2tokens service-token bridge, a compute
// stub (server lookups only) and heat-all, all on 127.0.0.1 with free ports, all state in one temporary directory.
// stop() ends exactly the processes start() began (each in its own process group) and removes the directory unless
// the run failed.

export interface RealHeat {
  /** Private state directory (configs and every service's log). */
  readonly dir: string;
  readonly keystoneUrl: string;
  readonly adminPassword: string;
  readonly apiPort: number;
  readonly cfnPort: number;
  readonly ec2Bridge: Ec2Bridge;
  readonly computeStub: ComputeStub;
  /** Swift proxy URL when started with { swift: true }. */
  readonly swiftUrl: string | undefined;
  /** Seconds each setup phase took, for the report. */
  readonly timings: Readonly<Record<string, number>>;
  /** `keep`: leave the state directory for inspection (failed runs). */
  stop(options?: { keep?: boolean }): Promise<void>;
}

export interface RealHeatOptions {
  /** Also run Swift (proxy with tempurl and Keystone auth) for the POLL_TEMP_URL / TEMP_URL_SIGNAL transports. */
  readonly swift?: boolean;
}

export async function startRealHeat(options: RealHeatOptions = {}): Promise<RealHeat> {
  const dir = mkdtempSync(path.join(tmpdir(), 'oca-real-heat-'));
  // PostgreSQL runs as its own account and must reach its directory inside this one.
  chmodSync(dir, 0o711);
  const services: Service[] = [];
  let bridge: Ec2Bridge | undefined;
  let compute: ComputeStub | undefined;
  let swift: Swift | undefined;
  const timings: Record<string, number> = {};
  let mark = Date.now();
  const phase = (name: string) => {
    const now = Date.now();
    timings[name] = (now - mark) / 1000;
    mark = now;
  };
  let heatDb: Promise<void> | undefined;
  const stopAll = async () => {
    await heatDb?.catch(() => undefined);
    await bridge?.close();
    await compute?.close();
    await swift?.close();
    // Reverse start order: Heat, Keystone, then the database they use.
    for (const s of [...services].reverse()) await s.stop(s.name === 'postgres' ? 'SIGINT' : 'SIGTERM');
  };
  try {
    const secret = () => randomBytes(12).toString('hex');
    const adminPassword = secret();
    const heatPassword = secret();
    const domainAdminPassword = secret();

    const pg = await startPostgres(dir);
    services.push(pg.service);
    await pg.createDatabases(['keystone', 'heat']);
    phase('postgres');

    const apiPort = await freePort();
    const cfnPort = await freePort();
    const heatConfSetup = {
      dir,
      databaseUrl: pg.url('heat'),
      apiPort,
      cfnPort,
      heatPassword,
      domainAdminPassword,
    };
    // Heat's schema migration needs no Keystone: run it while Keystone sets up.
    const heatDbConf = writeHeatConf({
      ...heatConfSetup,
      keystoneUrl: 'http://127.0.0.1:1/v3',
      ec2AuthUrl: 'http://127.0.0.1:1/v3',
    });
    heatDb = syncHeatDatabase(dir, heatDbConf);
    heatDb.catch(() => undefined);
    const keystone = await startKeystone({ dir, databaseUrl: pg.url('keystone'), adminPassword });
    services.push(keystone.service);
    phase('keystone');
    if (options.swift) {
      // Its Keystone middleware logs in lazily, so the heat user it uses may be created just after.
      swift = await startSwift(
        { dir, keystoneUrl: keystone.url, serviceUser: 'heat', servicePassword: heatPassword },
        services,
      );
      phase('swift');
    }
    compute = await startComputeStub();
    await createHeatIdentity(
      keystone.url,
      adminPassword,
      { api: apiPort, cfn: cfnPort, computeUrl: compute.url, swiftUrl: swift?.url },
      { heatPassword, domainAdminPassword },
    );
    bridge = await startEc2Bridge(keystone.url, { user: 'heat', password: heatPassword, project: 'service' });
    phase('identity');
    await heatDb;
    phase('heat db_sync (after keystone)');
    const setup = { ...heatConfSetup, keystoneUrl: keystone.url, ec2AuthUrl: bridge.url };
    const heat = await startHeat(setup, writeHeatConf(setup));
    services.push(heat);
    phase('heat-all');
    const ec2 = bridge;
    const nova = compute;
    return {
      dir,
      keystoneUrl: keystone.url,
      adminPassword,
      apiPort,
      cfnPort,
      ec2Bridge: ec2,
      computeStub: nova,
      swiftUrl: swift?.url,
      timings,
      async stop(options = {}) {
        await stopAll();
        // Retries: a process that was just killed may still have had a file open in it.
        if (!options.keep) rmSync(dir, { recursive: true, force: true, maxRetries: 5, retryDelay: 200 });
      },
    };
  } catch (err) {
    await stopAll();
    (err as Error).message += `\n(real-heat state and logs kept in ${dir})`;
    throw err;
  }
}
