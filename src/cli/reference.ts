import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { Command } from 'commander';
import { VERSION } from '../version.js';
import type { CommandContext } from './command-context.js';
import { COMMAND_NAMES, isCfnCommand } from './command-names.js';
import { bashCompletion } from './completion.js';
import { buildProgram } from './main.js';
import { manPage } from './man-page.js';

// What the build writes from the command definitions, beside the bundle: the manual pages (dist/man/*.1) and the
// bash completion (dist/completion/os-config-agent). The package installs both.

/**
 * heat-cfntools ships cfn-signal(1), cfn-init(1) and the pages of its other commands, and the two packages install side
 * by side: the agent's are os-config-agent-cfn-signal(1), os-config-agent-cfn-init(1), ...
 */
const hasOwnPage = (name: string): boolean => !isCfnCommand(name);
export const DOCS_DIR = '/usr/share/doc/os-config-agent';

export async function writeReference(outDir: string, date: string): Promise<string[]> {
  const ctx: CommandContext = { setExit: () => undefined, helpAll: true };
  const programs: Command[] = [];
  for (const name of COMMAND_NAMES) programs.push(await buildProgram(name, ctx, { all: true }));
  const pages = new Map<string, Command>();
  for (const program of programs) {
    if (!hasOwnPage(program.name())) continue;
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
