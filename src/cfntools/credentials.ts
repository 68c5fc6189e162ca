import { setSecrets } from '../log/redact.js';
import { readCappedFile } from '../util/read-json-file.js';
import { CfnCredentialsError } from './cfn-errors.js';

// The keys a request to heat-api-cfn is signed with: an AWS::IAM::AccessKey's id and secret, given on the command line
// (--access-key, --secret-key) or in a credential file (--credential-file, cfn-hup.conf's credential-file) of
// heat-cfntools' format, "AWSAccessKeyId=..." and "AWSSecretKey=..." lines. The file wins over the flags, as in
// heat-cfntools. The secret is registered with the logger as soon as it is read.

export interface CfnCredentials {
  readonly accessKey: string;
  readonly secretKey: string;
}

export interface CredentialSources {
  readonly accessKey?: string | undefined;
  readonly secretKey?: string | undefined;
  /** The file as this process reaches it (mapped under --root). */
  readonly credentialFile?: string | undefined;
  /** The file as the instance names it, for messages. */
  readonly shownFile?: string | undefined;
}

const MAX_FILE_BYTES = 64 * 1024;

/** The credentials given, or undefined when none are (heat-cfntools then reads its local copy of the metadata). */
export async function credentialsFrom(sources: CredentialSources): Promise<CfnCredentials | undefined> {
  if (sources.credentialFile) return readCredentialFile(sources.credentialFile, sources.shownFile);
  const { accessKey, secretKey } = sources;
  if (!accessKey && !secretKey) return undefined;
  if (!accessKey || !secretKey)
    throw new CfnCredentialsError(
      `${accessKey ? '--secret-key' : '--access-key'} is missing: give both --access-key and --secret-key, or --credential-file`,
    );
  return registered({ accessKey, secretKey });
}

export async function readCredentialFile(file: string, shown = file): Promise<CfnCredentials> {
  // A regular file only: a link to a FIFO or a device would hold the read forever or fill the memory.
  const read = await readCappedFile(file, MAX_FILE_BYTES);
  if (!read.ok) {
    const why =
      read.reason === 'missing'
        ? 'ENOENT'
        : read.reason === 'too-large'
          ? `larger than ${MAX_FILE_BYTES} bytes`
          : read.detail;
    throw new CfnCredentialsError(`cannot read the credential file ${shown}: ${why}`);
  }
  const text = read.bytes.toString('utf8');
  // heat-cfntools' reading: "KEY *= *value" at the start of a line, the last such line winning.
  const found: Record<string, string> = {};
  for (const line of text.split('\n')) {
    const m = /^(AWSAccessKeyId|AWSSecretKey) *= *(.*)$/.exec(line.replace(/\r$/, ''));
    if (m) found[m[1]!] = m[2]!;
  }
  const accessKey = found.AWSAccessKeyId;
  const secretKey = found.AWSSecretKey;
  if (!accessKey || !secretKey)
    throw new CfnCredentialsError(
      `the credential file ${shown} has no ${accessKey ? 'AWSSecretKey' : 'AWSAccessKeyId'} line: it needs "AWSAccessKeyId=<id>" and "AWSSecretKey=<secret>"`,
    );
  return registered({ accessKey, secretKey });
}

function registered(credentials: CfnCredentials): CfnCredentials {
  setSecrets('cfn credentials', [credentials.secretKey]);
  return credentials;
}
