import t from 'tap';
import {
  canonicalQueryV2,
  describeStackResourceUrl,
  rfc3986Encode,
  signV2,
} from '../../src/collectors/cfn-signature.js';
import { signV2 as referenceSign } from '../helpers/orchestrator/sigv2.js';

const VECTOR = {
  secret: 'FEDCBA9876543210',
  host: '192.0.2.1:8000',
  path: '/v1/',
  params: {
    Action: 'DescribeStackResource',
    StackName: 'foo',
    LogicalResourceId: 'res1',
    AWSAccessKeyId: '0123456789ABCDEF',
    SignatureVersion: '2',
    SignatureMethod: 'HmacSHA256',
  },
};

t.test('the known vector observed against the upstream signer', async (t) => {
  t.equal(
    signV2({ secret: VECTOR.secret, method: 'GET', host: VECTOR.host, path: VECTOR.path, params: VECTOR.params }),
    'EtB3VB56qmgTVU8/WfD/btd3VLy4FWLA/tW0yLD9nC0=',
  );
});

t.test('describeStackResourceUrl signs exactly the parameters upstream sends', async (t) => {
  const url = new URL(
    describeStackResourceUrl('http://192.0.2.1:8000/v1/', {
      stackName: 'foo',
      resource: 'res1',
      accessKeyId: '0123456789ABCDEF',
      secret: VECTOR.secret,
    }),
  );
  const q = Object.fromEntries(url.searchParams);
  t.same(Object.keys(q).sort(), [
    'AWSAccessKeyId',
    'Action',
    'LogicalResourceId',
    'Signature',
    'SignatureMethod',
    'SignatureVersion',
    'StackName',
  ]);
  t.equal(q.Signature, 'EtB3VB56qmgTVU8/WfD/btd3VLy4FWLA/tW0yLD9nC0=');
  t.notOk('Timestamp' in q, 'no Timestamp, as upstream');
  t.equal(url.pathname, '/v1/');
});

t.test('each call is a fresh HMAC: signing twice gives the same answer (no chaining, B3)', async (t) => {
  const a = describeStackResourceUrl('http://h:8000/v1/', {
    stackName: 's',
    resource: 'r1',
    accessKeyId: 'k',
    secret: 'x',
  });
  describeStackResourceUrl('http://h:8000/v1/', { stackName: 's', resource: 'r2', accessKeyId: 'k', secret: 'x' });
  const again = describeStackResourceUrl('http://h:8000/v1/', {
    stackName: 's',
    resource: 'r1',
    accessKeyId: 'k',
    secret: 'x',
  });
  t.equal(again, a);
});

t.test('signatures agree with the independent test-side signer, including awkward values', async (t) => {
  const params = {
    Action: 'DescribeStackResource',
    StackName: 'stack with spaces/ü~*',
    LogicalResourceId: "a'b(c)!",
    AWSAccessKeyId: 'K',
    SignatureVersion: '2',
    SignatureMethod: 'HmacSHA256',
  };
  const host = '127.0.0.1:8000';
  t.equal(
    signV2({ secret: 's3cr3t$', method: 'get', host, path: '/v1/', params }),
    referenceSign('s3cr3t$', 'GET', host, '/v1/', params),
  );
  const url = new URL(
    describeStackResourceUrl(`http://${host}/v1/`, {
      stackName: params.StackName,
      resource: params.LogicalResourceId,
      accessKeyId: 'K',
      secret: 's3cr3t$',
    }),
  );
  const q = Object.fromEntries(url.searchParams);
  t.equal(q.StackName, params.StackName, 'values survive the query encoding');
  t.equal(q.Signature, referenceSign('s3cr3t$', 'GET', host, '/v1/', q));
});

t.test('canonical query: code-point order, RFC 3986 encoding, Signature excluded', async (t) => {
  t.equal(canonicalQueryV2({ b: '2', a: '1', B: '3', Signature: 'zzz' }), 'B=3&a=1&b=2');
  t.equal(rfc3986Encode("a b+c/~-_.!*'()é"), 'a%20b%2Bc%2F~-_.%21%2A%27%28%29%C3%A9');
});

t.test('host is what the server sees: the port is kept, a default port is not', async (t) => {
  const withPort = new URL(
    describeStackResourceUrl('http://127.0.0.1:8000/v1/', {
      stackName: 's',
      resource: 'r',
      accessKeyId: 'k',
      secret: 'x',
    }),
  );
  t.equal(
    withPort.searchParams.get('Signature'),
    referenceSign('x', 'GET', '127.0.0.1:8000', '/v1/', Object.fromEntries(withPort.searchParams)),
  );
  const defaultPort = new URL(
    describeStackResourceUrl('http://cfn.example:80/v1/', {
      stackName: 's',
      resource: 'r',
      accessKeyId: 'k',
      secret: 'x',
    }),
  );
  t.equal(
    defaultPort.searchParams.get('Signature'),
    referenceSign('x', 'GET', 'cfn.example', '/v1/', Object.fromEntries(defaultPort.searchParams)),
  );
});

t.test('a query already on metadata_url is replaced by the signed one', async (t) => {
  const url = new URL(
    describeStackResourceUrl('http://h:1/v1/?junk=1', { stackName: 's', resource: 'r', accessKeyId: 'k', secret: 'x' }),
  );
  t.equal(url.searchParams.get('junk'), null);
  t.ok(url.searchParams.get('Signature'));
});
