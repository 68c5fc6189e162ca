import t from 'tap';
import { CfnMetadataError } from '../../src/cfntools/cfn-errors.js';
import { describeResourceMetadata } from '../../src/cfntools/describe-resource.js';
import { createHttpClient } from '../../src/http/client.js';
import { startCfnServer } from '../helpers/cfn-server.js';
import { refusedUrl, startTestServer } from '../helpers/http-test-server.js';

// A resource's metadata from a loopback heat-api-cfn that checks every signature, and every way it fails.

const http = createHttpClient({ defaultMaxBytes: 1024 * 1024, defaultRetries: 0, retryBaseMs: 1 });

t.test('signed with the keys, the Metadata element parsed; each refusal names the endpoint and resource', async (t) => {
  const server = await startCfnServer();
  t.teardown(() => server.close());
  const md = { 'AWS::CloudFormation::Init': { config: { files: {} } }, 'x<&>': 'é' };
  server.resources.set('web', JSON.stringify(md));
  server.resources.set('broken', '{not json');
  const req = (over: Partial<Parameters<typeof describeResourceMetadata>[1]> = {}) =>
    describeResourceMetadata(http, {
      endpoint: server.metadataUrl,
      stack: server.stackName,
      resource: 'web',
      credentials: { accessKey: server.accessKey, secretKey: server.secret },
      timeoutSeconds: 5,
      ...over,
    });
  t.same(await req(), md);
  t.same(server.verdicts, [true], 'the server checked the signature');
  const refused = await req({ credentials: { accessKey: server.accessKey, secretKey: 'wrong' } }).catch(
    (e: unknown) => e,
  );
  t.ok(refused instanceof CfnMetadataError);
  t.match(
    String(refused),
    /heat-api-cfn at http:\/\/127\.0\.0\.1:\d+\/v1\/ refused the keys for resource web of stack demo-stack \(403: AccessDenied: User is not authorized/,
  );
  t.notMatch(String(refused), /wrong|Signature=/, 'no secret, no signature in the message');
  await t.rejects(
    req({ resource: 'nosuch' }),
    /answered 404: ResourceNotFound for resource nosuch of stack demo-stack/,
  );
  await t.rejects(req({ stack: 'other' }), /answered 400: ValidationError/);
  await t.rejects(
    req({ resource: 'broken' }),
    /heat-api-cfn at http:\/\/127\.0\.0\.1:\d+\/v1\/ sent an answer that is not JSON for resource broken of stack demo-stack/,
  );
  server.rawBody = '<DescribeStackResourceResponse><oops>';
  await t.rejects(req(), /sent an answer that is not JSON/);
  server.rawBody = '{"DescribeStackResourceResponse": {"DescribeStackResourceResult": {}}}';
  await t.rejects(req(), /sent no Metadata/);
  // Metadata as JSON text, as the XML answer carries it, is read the same; text that is not JSON is refused.
  server.rawBody = `{"DescribeStackResourceResponse": {"DescribeStackResourceResult": {"StackResourceDetail": {"Metadata": ${JSON.stringify(JSON.stringify(md))}}}}}`;
  t.same(await req(), md);
  server.rawBody =
    '{"DescribeStackResourceResponse": {"DescribeStackResourceResult": {"StackResourceDetail": {"Metadata": "{no"}}}}';
  await t.rejects(req(), /the Metadata heat-api-cfn sent for resource web of stack demo-stack is not JSON/);
});

t.test("asked for as JSON, as heat-cfntools asks; heat-api-cfn's JSON errors are named", async (t) => {
  const server = await startTestServer((req, res) => {
    const q = new URL(req.url ?? '/', 'http://x').searchParams;
    if (q.get('LogicalResourceId') === 'gone') {
      res.writeHead(404, { 'content-type': 'application/json' });
      return void res.end(
        '{"ErrorResponse": {"Error": {"Type": "Sender", "Code": "ResourceNotFound", "Message": "The Resource (gone) could not be found."}}}',
      );
    }
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(
      `{"DescribeStackResourceResponse": {"DescribeStackResourceResult": {"StackResourceDetail": {"Metadata": {"asked": ${JSON.stringify(q.get('ContentType'))}, "n": 1.0}}}}}`,
    );
  });
  t.teardown(() => server.close());
  const base = {
    endpoint: `${server.url}/v1/`,
    stack: 's',
    credentials: { accessKey: 'a', secretKey: 'b' },
    timeoutSeconds: 5,
  };
  t.same(await describeResourceMetadata(http, { ...base, resource: 'web' }), { asked: 'JSON', n: 1 });
  await t.rejects(
    describeResourceMetadata(http, { ...base, resource: 'gone' }),
    /answered 404: ResourceNotFound: The Resource \(gone\) could not be found\. for resource gone of stack s/,
  );
});

t.test('an endpoint that refuses connections or hangs is a failure in bounded time', async (t) => {
  const base = { stack: 's', resource: 'r', credentials: { accessKey: 'a', secretKey: 'b' }, timeoutSeconds: 0.3 };
  await t.rejects(
    describeResourceMetadata(http, { ...base, endpoint: `${await refusedUrl()}/v1/` }),
    /cannot reach heat-api-cfn at http:\/\/127\.0\.0\.1:\d+\/v1\/ for resource r of stack s/,
  );
  const hang = await startTestServer(() => undefined);
  t.teardown(() => hang.close());
  await t.rejects(
    describeResourceMetadata(http, { ...base, endpoint: `${hang.url}/v1/` }),
    /cannot reach heat-api-cfn/,
  );
});
