import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { apiUrl, cfnEndpoint } from '../../src/cfntools/endpoint.js';
import { createPathMapper } from '../../src/util/rooted-path.js';

// Which heat-api-cfn the commands ask: --url, Heat's cfn-metadata-server, cfn-boto-cfg, then the agent's [cfn].

t.test('the first source found wins; the path is always /v1/', async (t) => {
  const root = t.testdir();
  const paths = createPathMapper(root);
  const lib = path.join(root, 'var/lib/heat-cfntools');
  mkdirSync(lib, { recursive: true });
  t.equal(await cfnEndpoint({ paths }), undefined, 'nothing known: no endpoint (never AWS)');
  t.same(await cfnEndpoint({ paths, configured: 'https://cfn.example:8000/v1/' }), {
    url: 'https://cfn.example:8000/v1/',
    from: '[cfn] metadata_url',
  });
  writeFileSync(path.join(lib, 'cfn-boto-cfg'), '[Boto]\ndebug = 0\ncfn_region_endpoint = 192.0.2.7\n');
  t.same(await cfnEndpoint({ paths, configured: 'https://x/v1/' }), {
    url: 'http://192.0.2.7:8000/v1/',
    from: 'cfn-boto-cfg',
  });
  writeFileSync(path.join(lib, 'cfn-boto-cfg'), '[Boto]\ncfn_region_endpoint = fd00::7\n');
  t.equal((await cfnEndpoint({ paths }))?.url, 'http://[fd00::7]:8000/v1/', 'an IPv6 host in brackets');
  writeFileSync(path.join(lib, 'cfn-metadata-server'), 'http://192.0.2.9:8000/v1/\n');
  t.same(await cfnEndpoint({ paths }), { url: 'http://192.0.2.9:8000/v1/', from: 'cfn-metadata-server' });
  t.same(await cfnEndpoint({ paths, url: 'http://127.0.0.1:9/' }), { url: 'http://127.0.0.1:9/v1/', from: '--url' });
});

t.test("the URL's forms Heat has written, and bad ones", async (t) => {
  t.equal(apiUrl('http://h:8000', 'x'), 'http://h:8000/v1/', "older Heat's: no path");
  t.equal(apiUrl('http://h:8000/v1/', 'x'), 'http://h:8000/v1/', "newer Heat's");
  t.equal(apiUrl('http://h:8000/v1', 'x'), 'http://h:8000/v1/');
  t.equal(
    apiUrl(' https://h/prefix/?q=1#f ', 'x'),
    'https://h/prefix/v1/',
    'a prefix kept, query and fragment dropped',
  );
  t.throws(() => apiUrl('not a url', 'cfn-metadata-server'), /the CFN endpoint from cfn-metadata-server is not a URL/);
  t.throws(() => apiUrl('ftp://h/', 'x'), /must be http or https/);
});
