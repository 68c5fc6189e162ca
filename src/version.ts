import pkg from '../package.json' with { type: 'json' };

/** The agent's version (bundled from package.json at build time). */
export const VERSION: string = pkg.version;
