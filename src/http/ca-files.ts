import { readFileSync } from 'node:fs';
import { HttpError } from './http-error.js';

// CA bundles named by the configuration (ca_certificate, ca_file), read once per client: a poll every second must not
// read the file every second. A client is made anew when the configuration is reloaded, and reads them again then.

export class CaFiles {
  private readonly read = new Map<string, string>();

  /** The bundle's text; an unreadable file fails the request that needs it, naming the file and the option. */
  text(file: string, shown: string): string {
    let ca = this.read.get(file);
    if (ca !== undefined) return ca;
    try {
      ca = readFileSync(file, 'utf8');
    } catch (err) {
      const reason = `cannot read CA file ${file}: ${(err as NodeJS.ErrnoException).code ?? err}; fix the ca_certificate/ca_file option`;
      throw new HttpError(reason, shown, 'ERR_HTTP', { cause: err, reason });
    }
    this.read.set(file, ca);
    return ca;
  }
}
