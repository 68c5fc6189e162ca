// What an option is (its kind, default, help and handling) and the builders the schema (options.ts) is written with.

/** The longest wait a Node.js timer can do, in whole seconds (2^31-1 ms). */
export const MAX_TIMER_SECONDS = 2_147_483;

export type OptionKind = 'str' | 'multi' | 'float' | 'int' | 'bool';

export interface OptionSpec<T> {
  readonly kind: OptionKind;
  readonly default: T;
  readonly help: string;
  /** Credential: registered for log scrubbing, never printed. */
  readonly secret?: boolean;
  /** An absolute filesystem path: mapped under --root. */
  readonly path?: boolean;
  /** Short command-line alias (upstream: -c, -i). */
  readonly short?: string;
  /** Command-line flag name when it differs from the derived one (upstream: --print for print_only). */
  readonly flag?: string;
  /** Not offered on the command line. */
  readonly fileOnly?: boolean;
  /** Lower bound for numbers. */
  readonly min?: number;
  /** Upper bound for numbers. */
  readonly max?: number;
  /** For a text option: why a value cannot be used (an unknown log level, a malformed limit), or undefined. */
  readonly check?: (value: string) => string | undefined;
  /**
   * What an invalid value is replaced by, where keeping the value before it would send requests somewhere the operator
   * did not name ([ec2] metadata_url: the default list of metadata addresses). `meaning` ends the problem's message.
   */
  readonly onInvalid?: { readonly value: string; readonly meaning: string };
  /** The value may carry a password or a signature (a URL): a problem never quotes it, nor the value kept. */
  readonly unquoted?: boolean;
  /** The values a string option accepts (anything else is an error, and the default is kept). */
  readonly choices?: readonly string[];
}

export function str(def: string, help: string, extra?: Partial<OptionSpec<string>>): OptionSpec<string>;
export function str(
  def: undefined,
  help: string,
  extra?: Partial<OptionSpec<string | undefined>>,
): OptionSpec<string | undefined>;
export function str(
  def: string | undefined,
  help: string,
  extra: Partial<OptionSpec<string | undefined>> = {},
): OptionSpec<string | undefined> {
  return { kind: 'str', default: def, help, ...extra };
}
export function path(def: string, help: string, extra?: Partial<OptionSpec<string>>): OptionSpec<string>;
export function path(
  def: undefined,
  help: string,
  extra?: Partial<OptionSpec<string | undefined>>,
): OptionSpec<string | undefined>;
export function path(
  def: string | undefined,
  help: string,
  extra: Partial<OptionSpec<string | undefined>> = {},
): OptionSpec<string | undefined> {
  return { kind: 'str', default: def, help, path: true, ...extra };
}
export const secret = (help: string): OptionSpec<string | undefined> => ({
  kind: 'str',
  default: undefined,
  help,
  secret: true,
});
export const multi = (
  def: readonly string[],
  help: string,
  extra: Partial<OptionSpec<readonly string[]>> = {},
): OptionSpec<readonly string[]> => ({
  kind: 'multi',
  default: def,
  help,
  ...extra,
});
export const float = (def: number, help: string, extra: Partial<OptionSpec<number>> = {}): OptionSpec<number> => ({
  kind: 'float',
  default: def,
  help,
  min: 0,
  ...extra,
});
export const int = (def: number, help: string, extra: Partial<OptionSpec<number>> = {}): OptionSpec<number> => ({
  kind: 'int',
  default: def,
  help,
  min: 0,
  ...extra,
});
export const bool = (def: boolean, help: string, extra: Partial<OptionSpec<boolean>> = {}): OptionSpec<boolean> => ({
  kind: 'bool',
  default: def,
  help,
  ...extra,
});

/** Collector names upstream accepts, in upstream's default order. */
