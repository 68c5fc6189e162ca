import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { Command } from 'commander';
import { VERSION } from '../version.js';
import type { CommandContext } from './command-context.js';
import { COMMAND_NAMES, type CommandName } from './command-names.js';
import { bashCompletion } from './completion.js';
import { buildProgram } from './main.js';
import { manPage } from './man-page.js';

// What the build writes from the command definitions, beside the bundle: the manual pages (dist/man/*.1) and the
// bash completion (dist/completion/os-config-agent). The package installs both.

/** heat-cfntools ships cfn-signal(1); the agent's cfn-signal is os-config-agent-cfn-signal(1). */
const NO_PAGE: readonly CommandName[] = ['cfn-signal'];
export const DOCS_DIR = '/usr/share/doc/os-config-agent';

export async function writeReference(outDir: string, date: string): Promise<string[]> {
  const ctx: CommandContext = { setExit: () => undefined, helpAll: true };
  const programs: Command[] = [];
  for (const name of COMMAND_NAMES) programs.push(await buildProgram(name, ctx, { all: true }));
  const pages = new Map<string, Command>();
  for (const program of programs) {
    if (NO_PAGE.includes(program.name() as CommandName)) continue;
    pages.set(program.name(), program);
    for (const sub of program.commands.filter((c) => c.name() !== 'help'))
      pages.set(`${program.name()}-${sub.name()}`, sub);
  }
  const seeAlso = [...pages.keys()].map((p) => `${p}(1)`);
  await mkdir(path.join(outDir, 'man'), { recursive: true });
  for (const [page, cmd] of pages)
    await writeFile(
      path.join(outDir, 'man', `${page}.1`),
      manPage(cmd, { date, version: VERSION, seeAlso, docs: DOCS_DIR }),
    );
  await mkdir(path.join(outDir, 'completion'), { recursive: true });
  await writeFile(path.join(outDir, 'completion', 'os-config-agent'), bashCompletion(programs));
  return [...pages.keys()];
}
