import type { Argument, Command, Option } from 'commander';
import { commandPath } from './program.js';
import { exitStatusOf } from './help-notes.js';

// Manual pages (man(7) roff) written from the same definitions as --help: one per command. Every flag a person can
// give is listed (the configuration overrides too, which --help only counts), grouped under the headings --help uses.

export interface ManPageInfo {
  /** The date of the release, YYYY-MM-DD. */
  readonly date: string;
  readonly version: string;
  /** Other pages, as `name(section)`. */
  readonly seeAlso: readonly string[];
  /** Where the documentation is installed. */
  readonly docs: string;
}

/** The page of `cmd` (a program, or one of its subcommands). */
export function manPage(cmd: Command, info: ManPageInfo): string {
  const name = commandPath(cmd);
  const title = name.replace(/ /g, '-');
  const out: string[] = [
    `.TH ${title.toUpperCase()} 1 "${info.date}" "os-config-agent ${info.version}" "User Commands"`,
    // Ragged right, no hyphenation: long paths and URLs would otherwise stretch lines (and warn).
    '.ad l',
    '.nh',
    '.SH NAME',
    `${escape(title)} \\- ${escape(firstSentence(cmd.description()))}`,
    '.SH SYNOPSIS',
    `.B ${escape(name)}`,
    escape(cmd.usage()),
    '.SH DESCRIPTION',
    paragraph(cmd.description()),
  ];
  const args = (cmd as unknown as { registeredArguments: readonly Argument[] }).registeredArguments;
  if (args.length > 0) {
    out.push('.SH ARGUMENTS');
    for (const a of args) out.push('.TP', `.I ${escape(a.name())}`, paragraph(a.description));
  }
  const commands = cmd.commands.filter((c) => c.name() !== 'help');
  if (commands.length > 0) {
    out.push('.SH COMMANDS');
    for (const c of commands)
      out.push('.TP', `.B ${escape(c.name())}`, paragraph(`${c.description()} (see ${title}-${c.name()}(1))`));
  }
  for (const [heading, options] of optionGroups(cmd)) {
    out.push(
      `.SH ${escape(
        heading
          .replace(/:$/, '')
          .replace(/ \(.*\)$/, '')
          .toUpperCase(),
      )}`,
    );
    for (const o of options) out.push('.TP', `.B ${escape(o.flags)}`, paragraph(optionHelp(o)));
  }
  const exit = exitStatusOf(cmd);
  if (exit) out.push('.SH EXIT STATUS', paragraph(exit.join(' ').replace(/^Exit status: /, '')));
  out.push(
    '.SH FILES',
    '.TP',
    '.I /etc/os-collect-config.conf',
    paragraph('the configuration file; local settings also go in /etc/os-collect-config.conf.d/*.conf'),
    '.SH SEE ALSO',
    paragraph(`${info.seeAlso.filter((s) => s !== `${title}(1)`).join(', ')}; the documentation in ${info.docs}`),
  );
  return `${out.join('\n')}\n`;
}

/** The visible options of `cmd`, by their help heading, in the order --help shows them. */
function optionGroups(cmd: Command): Array<[string, Option[]]> {
  const groups = new Map<string, Option[]>();
  for (const o of cmd.options as readonly Option[]) {
    if (o.hidden) continue;
    const heading = o.helpGroupHeading ?? 'Options:';
    groups.set(heading, [...(groups.get(heading) ?? []), o]);
  }
  return [...groups];
}

function optionHelp(o: Option): string {
  const shown = o.defaultValue !== undefined && !o.negate ? ` (default: ${JSON.stringify(o.defaultValue)})` : '';
  return `${o.description}${shown}`;
}

function firstSentence(text: string): string {
  return text.replace(/\.$/, '').split(/; |\. /)[0] ?? text;
}

/** Text as a roff paragraph: no line starts with a control character, backslashes and hyphens kept as typed. */
function paragraph(text: string): string {
  return escape(text)
    .replace(/^([.'])/gm, '\\&$1')
    .replace(/\S{40,}/g, (long) => long.replace(/([,/])/g, '$1\\:'));
}

function escape(text: string): string {
  return text.replace(/\\/g, '\\e').replace(/-/g, '\\-');
}
