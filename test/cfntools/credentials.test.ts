import { execFileSync } from 'node:child_process';
import { symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { CfnCredentialsError } from '../../src/cfntools/cfn-errors.js';
import { credentialsFrom, readCredentialFile } from '../../src/cfntools/credentials.js';
import { scrubText } from '../../src/log/redact.js';

// The keys of a heat-api-cfn request: flags, or a credential file in heat-cfntools' format, which wins.

t.test(
  "heat-cfntools' credential file: KEY = value lines, the last one winning; the file wins over flags",
  async (t) => {
    const dir = t.testdir();
    const file = path.join(dir, 'cfn-credentials');
    writeFileSync(
      file,
      '# a comment\nAWSAccessKeyId = AKOLD\r\nAWSAccessKeyId=AKNEW\nAWSSecretKey=sec ret=with=equals\n',
    );
    t.same(await readCredentialFile(file), { accessKey: 'AKNEW', secretKey: 'sec ret=with=equals' });
    t.same(await credentialsFrom({ accessKey: 'flag', secretKey: 'flag-secret', credentialFile: file }), {
      accessKey: 'AKNEW',
      secretKey: 'sec ret=with=equals',
    });
    t.equal(
      scrubText('a line with sec ret=with=equals in it'),
      'a line with [REDACTED] in it',
      'the secret is scrubbed from logs',
    );
  },
);

t.test('flags: both, or none (heat-cfntools then reads its local copy); one alone is an error', async (t) => {
  t.same(await credentialsFrom({ accessKey: 'AK', secretKey: 'flag-secret-1' }), {
    accessKey: 'AK',
    secretKey: 'flag-secret-1',
  });
  t.equal(await credentialsFrom({}), undefined);
  await t.rejects(credentialsFrom({ accessKey: 'AK' }), /--secret-key is missing/);
  await t.rejects(credentialsFrom({ secretKey: 'S' }), /--access-key is missing/);
});

t.test('a credential file that cannot be used names itself and what is missing', async (t) => {
  const dir = t.testdir();
  const half = path.join(dir, 'half');
  writeFileSync(half, 'AWSAccessKeyId=AK\n');
  const err = await readCredentialFile(half, '/etc/cfn/cfn-credentials').catch((e: unknown) => e);
  t.ok(err instanceof CfnCredentialsError);
  t.match(String(err), /\/etc\/cfn\/cfn-credentials has no AWSSecretKey line/);
  t.equal((err as CfnCredentialsError).code, 'ERR_CFN_CREDENTIALS');
  await t.rejects(
    readCredentialFile(path.join(dir, 'missing'), '/etc/cfn/none'),
    /cannot read the credential file \/etc\/cfn\/none: ENOENT/,
  );
  writeFileSync(path.join(dir, 'big'), 'x'.repeat(70_000));
  await t.rejects(readCredentialFile(path.join(dir, 'big')), /larger than/);
  // Neither a FIFO (read as before, it would wait for a writer forever) nor a device is read.
  execFileSync('mkfifo', [path.join(dir, 'fifo')]);
  await t.rejects(readCredentialFile(path.join(dir, 'fifo'), '/etc/cfn/fifo'), /\/etc\/cfn\/fifo: not a regular file/);
  symlinkSync('/dev/zero', path.join(dir, 'zero'));
  await t.rejects(readCredentialFile(path.join(dir, 'zero'), '/etc/cfn/zero'), /\/etc\/cfn\/zero: not a regular file/);
});
