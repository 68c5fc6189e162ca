import type { Command, Option } from 'commander';

// Bash completion for every command name, written from the same definitions as their --help: the subcommands of
// os-config-agent, each command's flags (the configuration overrides too; not those help hides: oslo's ignored log
// flags, the --no- forms), file and directory names after a flag that takes one (<file>, <dir>, <path>), and the
// values of a flag with fixed choices.

type ValueKind = { readonly kind: 'file' | 'dir' | 'word' } | { readonly kind: 'choices'; readonly words: string[] };

interface Completable {
  readonly flags: readonly string[];
  readonly values: ReadonlyMap<string, ValueKind>;
}

const LOG_LEVEL_WORDS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace'];

function completable(cmd: Command): Completable {
  const flags: string[] = [];
  const values = new Map<string, ValueKind>();
  for (const option of cmd.options as readonly Option[]) {
    const names = [option.short, option.long].filter((n): n is string => n !== undefined);
    if (!option.hidden || option.helpGroupHeading !== undefined) flags.push(...names);
    if (!option.required && !option.optional) continue;
    const kind = valueKind(option);
    for (const name of names) values.set(name, kind);
  }
  if (!flags.includes('--help')) flags.push('--help');
  return { flags, values };
}

function valueKind(option: Option): ValueKind {
  if (option.argChoices) return { kind: 'choices', words: option.argChoices };
  if (option.long === '--log-level') return { kind: 'choices', words: LOG_LEVEL_WORDS };
  if (/<dir>|<dirs?\.\.\.>/.test(option.flags)) return { kind: 'dir' };
  if (/<(file|path)>|\[files\.\.\.\]/.test(option.flags)) return { kind: 'file' };
  return { kind: 'word' };
}

function functionName(name: string): string {
  return `_${name.replace(/[^A-Za-z0-9]/g, '_')}`;
}

/** The `case "$prev"` branches that complete a flag's value; words for none (the user types it). */
function valueCases(values: ReadonlyMap<string, ValueKind>, indent: string): string[] {
  const byReply = new Map<string, string[]>();
  for (const [flag, kind] of values) {
    const reply =
      kind.kind === 'dir'
        ? 'COMPREPLY=($(compgen -d -- "$cur"))'
        : kind.kind === 'file'
          ? 'COMPREPLY=($(compgen -f -- "$cur"))'
          : kind.kind === 'choices'
            ? `COMPREPLY=($(compgen -W '${kind.words.join(' ')}' -- "$cur"))`
            : 'COMPREPLY=()';
    byReply.set(reply, [...(byReply.get(reply) ?? []), flag]);
  }
  return [...byReply].map(([reply, flags]) => `${indent}${flags.join(' | ')}) ${reply}; return ;;`);
}

/** The completion function of one program without subcommands. */
function plainFunction(name: string, program: Command): string {
  const c = completable(program);
  return [
    `${functionName(name)}() {`,
    '    local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}',
    '    case $prev in',
    ...valueCases(c.values, '        '),
    '    esac',
    `    COMPREPLY=($(compgen -W '${c.flags.join(' ')}' -- "$cur"))`,
    '}',
    `complete -o default -F ${functionName(name)} ${name}`,
  ].join('\n');
}

/** The completion function of a program with subcommands: global flags before the subcommand, its own after it. */
function subcommandFunction(name: string, program: Command): string {
  const global = completable(program);
  const subs = program.commands.filter((c) => c.name() !== 'help');
  const skipValue = [...global.values.keys()];
  const lines = [
    `${functionName(name)}() {`,
    '    local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]} sub= i',
    '    for ((i = 1; i < COMP_CWORD; i++)); do',
    '        case ${COMP_WORDS[i]} in',
    ...(skipValue.length > 0 ? [`            ${skipValue.join(' | ')}) ((i++)) ;;`] : []),
    '            -*) ;;',
    '            *) sub=${COMP_WORDS[i]}; break ;;',
    '        esac',
    '    done',
    '    case $sub in',
    "        '')",
    '            case $prev in',
    ...valueCases(global.values, '                '),
    '            esac',
    `            COMPREPLY=($(compgen -W '${[...subs.map((s) => s.name()), ...global.flags].join(' ')}' -- "$cur")) ;;`,
  ];
  for (const sub of subs) {
    const c = completable(sub);
    lines.push(
      `        ${sub.name()})`,
      '            case $prev in',
      ...valueCases(c.values, '                '),
      '            esac',
      `            COMPREPLY=($(compgen -W '${c.flags.join(' ')}' -- "$cur")) ;;`,
    );
  }
  lines.push('    esac', '}', `complete -o default -F ${functionName(name)} ${name}`);
  return lines.join('\n');
}

/** One bash script completing every program (each fully defined, its overrides included). */
export function bashCompletion(programs: readonly Command[]): string {
  const parts = programs.map((p) =>
    p.commands.length > 0 ? subcommandFunction(p.name(), p) : plainFunction(p.name(), p),
  );
  return `# bash completion for os-config-agent and its compatibility commands (os-config-agent completion bash)\n\n${parts.join('\n\n')}\n`;
}
