import { promises as fs } from 'node:fs';
import { SIGNAL_LIMIT_BYTES } from '../heat/signal-body.js';
import type { QueuedSignalKind } from '../signals/cfn-signal-queue/entry.js';
import {
  cfnBody,
  DEFAULT_DATA,
  DEFAULT_REASON,
  nativeBody,
  nativeBodyFromJson,
  SignalInputError,
  statusFrom,
} from '../heat/wait-condition-body.js';

// The command line of `cfn-signal` turned into what is queued: where (URL, and the token for Heat's native handle),
// and the body. Everything that makes a signal unsendable is refused here, before anything is written.
//   no --token: PUT to a pre-signed URL. The body is cfn-signal's (AWS::CloudFormation::WaitConditionHandle), or with
//               --body the native handle's (OS::Heat::WaitConditionHandle with signal_transport CFN_SIGNAL or
//               TEMP_URL_SIGNAL, whose `signal` attribute gives such a URL).
//   --token:    POST with X-Auth-Token (the native handle's default TOKEN_SIGNAL, its curl_cli), the native body.

export interface CfnSignalFlags {
  success?: string;
  reason?: string;
  data?: string;
  dataFile?: string;
  id?: string;
  exitCode?: string;
  exit?: string;
  insecure?: boolean;
  token?: string;
  body?: string;
}

export interface SignalInput {
  readonly kind: QueuedSignalKind;
  readonly url: string;
  readonly text: string;
  readonly token?: string;
  readonly insecure: boolean;
}

/** The URL a signal may go to: http or https, absolute, no line breaks. */
function checkSignalUrl(url: string | undefined): string {
  if (url === undefined || url.trim() === '')
    throw new SignalInputError('no WaitConditionHandle URL given; pass it as the last argument');
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new SignalInputError(
      "the WaitConditionHandle URL is not a valid absolute URL; pass the handle's URL as Heat gave it",
    );
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:')
    throw new SignalInputError(`the WaitConditionHandle URL uses ${parsed.protocol}; only http and https are sent to`);
  if (parsed.hostname === '') throw new SignalInputError('the WaitConditionHandle URL has no host');
  return url;
}

/** Flags that need no configuration checked (URL, token, --body): wrong ones fail before the configuration is read. */
export function checkFlags(url: string | undefined, flags: CfnSignalFlags): void {
  checkSignalUrl(url);
  if (flags.token !== undefined && (flags.token === '' || /[\r\n]/.test(flags.token)))
    throw new SignalInputError("--token is empty or holds a line break; pass the handle's token as Heat gave it");
  if (flags.body !== undefined && (flags.data !== undefined || flags.dataFile !== undefined))
    throw new SignalInputError('--body gives the whole body; leave out -d/--data and --data-file');
  if (flags.data !== undefined && flags.dataFile !== undefined)
    throw new SignalInputError('give -d/--data or --data-file, not both');
}

/** Build the signal; `uniqueId` supplies the default id (read only when -i is not given). */
export async function signalInput(
  url: string,
  flags: CfnSignalFlags,
  uniqueId: () => Promise<string>,
): Promise<SignalInput> {
  checkFlags(url, flags);
  const native = flags.token !== undefined;
  let text: string;
  if (flags.body !== undefined) {
    text = nativeBodyFromJson(flags.body);
  } else {
    const data = flags.dataFile !== undefined ? await readDataFile(flags.dataFile) : (flags.data ?? DEFAULT_DATA);
    const exitCode = flags.exitCode ?? flags.exit;
    const fields = {
      status: statusFrom({
        ...(flags.success !== undefined ? { success: flags.success } : {}),
        ...(exitCode !== undefined ? { exitCode } : {}),
      }),
      reason: flags.reason ?? DEFAULT_REASON,
      data,
      uniqueId: flags.id ?? (await uniqueId()),
    };
    text = native ? nativeBody(fields) : cfnBody(fields);
  }
  return {
    kind: native ? 'native' : 'cfn',
    url,
    text,
    ...(native ? { token: flags.token } : {}),
    insecure: flags.insecure === true,
  };
}

/** --data-file FILE ('-': standard input), read up to just over the size limit. */
async function readDataFile(file: string): Promise<string> {
  const limit = SIGNAL_LIMIT_BYTES;
  const chunks: Buffer[] = [];
  let total = 0;
  try {
    const stream = file === '-' ? process.stdin : (await fs.open(file, 'r')).createReadStream();
    for await (const chunk of stream as AsyncIterable<Buffer>) {
      chunks.push(chunk);
      total += chunk.length;
      if (total > limit) {
        if ('destroy' in stream) stream.destroy();
        throw new SignalInputError(
          `--data-file ${file} holds over ${limit} bytes; Heat refuses signals over 1 MiB: send less data`,
        );
      }
    }
  } catch (err) {
    if (err instanceof SignalInputError) throw err;
    throw new SignalInputError(
      `cannot read --data-file ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`,
    );
  }
  return Buffer.concat(chunks).toString('utf8');
}
