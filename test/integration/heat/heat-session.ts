import { HeatClient } from './heat-client.js';
import { startRealHeat, type RealHeat, type RealHeatOptions } from './harness.js';

// Real Heat for one test file, as the real-Heat and booted-image tests use it: started (and timed) in the file's
// t.before with a client for it, stopped in its t.teardown, its state directory kept for inspection when a test
// failed or OCA_REAL_HEAT_KEEP=1.

/** What of the file's tap test this needs: its comments and whether it passed so far. */
interface FileTest {
  comment(...message: unknown[]): void;
  passing(): boolean;
}

export async function startHeatSession(
  t: FileTest,
  options: RealHeatOptions = {},
): Promise<{ heat: RealHeat; client: HeatClient }> {
  const started = Date.now();
  const heat = await startRealHeat(options);
  t.comment(
    `real Heat up in ${((Date.now() - started) / 1000).toFixed(1)} s (${JSON.stringify(heat.timings)}); state in ${heat.dir}`,
  );
  return { heat, client: new HeatClient(heat.keystoneUrl, heat.adminPassword, heat.apiPort) };
}

/** Stops it; `alsoKept` completes the comment that says where the kept state is. Resolves with whether it was kept. */
export async function stopHeatSession(t: FileTest, heat: RealHeat, alsoKept = ''): Promise<boolean> {
  const keep = !t.passing() || process.env.OCA_REAL_HEAT_KEEP === '1';
  await heat.stop({ keep });
  if (keep) t.comment(`real-heat state and logs kept in ${heat.dir}${alsoKept}`);
  return keep;
}
