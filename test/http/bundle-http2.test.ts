import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { REPO, requireBundle } from '../helpers/bundle.js';

// got's HTTP/2 support (http2-wrapper) is left out of the bundle (scripts/http2-off.cjs): loading it built a TLS
// socket, and so parsed the CA store, at the first request of every process (~25 ms of CPU, ~1 MB).

t.test('the bundle carries the http2-wrapper stand-in, not http2-wrapper', async (t) => {
  const chunks = path.join(path.dirname(requireBundle()), 'chunks');
  const text = readdirSync(chunks)
    .map((f) => readFileSync(path.join(chunks, f), 'utf8'))
    .join('\n');
  t.match(text, 'http2-wrapper is left out of the bundle', 'the stand-in is there');
  t.notMatch(text, /_parentWrap/, "http2-wrapper's js-stream-socket is not");
  t.ok(
    readFileSync(path.join(REPO, 'scripts/build.mjs'), 'utf8').includes("'http2-wrapper': './scripts/http2-off.cjs'"),
  );
});
