import { cp } from 'node:fs/promises';
import path from 'node:path';
import { redactUrl } from '../../log/redact.js';
import { HookFailure, type HookContext, type HookDeployment } from '../contract.js';
import { makeDirs, removeFiles } from '../kit/work-files.js';
import { readLayout, type SourceLayout } from './cookbook-layout.js';
import { berksVendor, exportPolicy } from './dependencies.js';
import { sweepCredentials } from './git-access.js';
import { syncGitSource } from './git-source.js';
import { credentialInputs, kitchenOptions, type SourceSpec } from './source-options.js';
import { syncTarballSource, tarballRoot } from './tarball-source.js';

// Everything chef-client reads from disk, made from the deployment's sources in order: the main kitchen (`kitchen`
// at `kitchen_path`, upstream's) first, then `kitchen_sources`. Where the sources live, under the working directory:
//   sources/<kind>-<name>-<hash>   a git checkout or an unpacked tarball, kept for the next run
//   cookbooks/<name>               a copy of each source that is one cookbook (Chef finds a cookbook by its directory)
//   berks/<source>                 what `berks vendor` made of a source's Berksfile
//   policy                         what `chef export` made of a Policyfile.rb
//   credentials/                   SSH keys and known_hosts, only while a fetch runs

export interface Kitchen {
  /** chef-client's cookbook_path, in order: the main kitchen's cookbooks/ always first, as upstream. */
  readonly cookbookPaths: readonly string[];
  readonly rolePath: string;
  readonly environmentPath: string;
  /** A Policyfile source's export: chef-client runs the policy instead of a run list. */
  readonly policy?: { readonly repo: string; readonly name: string };
  /** Inputs that hold the sources' credentials (not node attributes). */
  readonly credentialInputs: ReadonlySet<string>;
}

export async function prepareKitchen(ctx: HookContext, deployment: HookDeployment, working: string): Promise<Kitchen> {
  const { kitchenPath, sources } = kitchenOptions(deployment, working);
  const base = {
    rolePath: path.join(kitchenPath, 'roles'),
    environmentPath: path.join(kitchenPath, 'environments'),
    credentialInputs: credentialInputs(sources),
  };
  await removeFiles(path.join(working, 'cookbooks'));
  if (sources.length === 0) return { ...base, cookbookPaths: [path.join(kitchenPath, 'cookbooks')] };

  await sweepCredentials(working);
  const layouts: SourceLayout[] = [];
  for (const source of sources) layouts.push(await fetchSource(ctx, source, working));

  const policies = layouts.filter((l) => l.policyfile);
  if (policies.length > 0) {
    const [policy] = policies;
    if (sources.length > 1 || !policy)
      throw new HookFailure(
        'a source has a Policyfile.rb, which names every cookbook of the node: it must be the only source (kitchen or a single kitchen_sources entry)',
      );
    const repo = path.join(working, 'policy');
    const name = await exportPolicy(ctx, policy.dir, repo, sources[0]?.label ?? 'kitchen');
    return { ...base, cookbookPaths: [], policy: { repo, name } };
  }

  return { ...base, cookbookPaths: await cookbookPaths(ctx, sources, layouts, working, kitchenPath) };
}

/** The cookbook directories of the sources, in order; one-cookbook sources copied and Berksfiles vendored. */
async function cookbookPaths(
  ctx: HookContext,
  sources: readonly SourceSpec[],
  layouts: readonly SourceLayout[],
  working: string,
  kitchenPath: string,
): Promise<string[]> {
  const paths = [path.join(kitchenPath, 'cookbooks')];
  const copies = path.join(working, 'cookbooks');
  const copied = new Set<string>();
  for (const [i, layout] of layouts.entries()) {
    const source = sources[i];
    if (!source) continue;
    const main = source.label === 'kitchen';
    if (layout.cookbooks && !main) paths.push(path.join(layout.dir, 'cookbooks'));
    if (layout.berksfile) {
      const vendored = path.join(working, 'berks', path.basename(source.dir));
      await berksVendor(ctx, layout.dir, vendored, source.label);
      paths.push(vendored);
    } else if (layout.cookbook) {
      if (copied.has(layout.cookbook))
        throw new HookFailure(`${source.label}: a cookbook named ${layout.cookbook} comes from an earlier source too`);
      if (copied.size === 0) paths.push(copies);
      copied.add(layout.cookbook);
      await makeDirs(copies);
      await cp(layout.dir, path.join(copies, layout.cookbook), {
        recursive: true,
        verbatimSymlinks: true,
        filter: (from) => path.basename(from) !== '.git',
      });
    } else if (!layout.cookbooks && !main) {
      throw new HookFailure(
        `${source.label}: ${redactUrl(source.url)} holds no cookbook: neither metadata.rb or metadata.json (one cookbook), a cookbooks/ directory (a kitchen), a Berksfile nor a Policyfile.rb`,
      );
    }
  }
  return paths;
}

async function fetchSource(ctx: HookContext, source: SourceSpec, working: string): Promise<SourceLayout> {
  if (source.kind === 'git') {
    const commit = await syncGitSource(ctx, source, working);
    ctx.log.info('kitchen source checked out', { source: source.label, ref: source.ref ?? 'HEAD', commit });
    return readLayout(source.dir, source.label);
  }
  await syncTarballSource(ctx, source);
  ctx.log.info('kitchen source unpacked', { source: source.label });
  return readLayout(await tarballRoot(source.dir), source.label);
}
