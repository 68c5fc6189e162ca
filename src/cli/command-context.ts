// What main hands every command module when it defines its command: where the exit code goes, and whether help is to
// list every configuration override (`--help-all`).

export interface CommandContext {
  readonly setExit: (code: number) => void;
  readonly helpAll: boolean;
}

/** The help heading of the flags every command shares, listed after the command's own. */
export const COMMON_HEADING = 'Common options:';
