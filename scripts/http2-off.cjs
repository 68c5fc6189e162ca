/* global module */
// Stand-in for `http2-wrapper` in the bundle (scripts/build.mjs). got imports it for its `http2` option, which the
// agent never sets (src/http/client.ts), and its module js-stream-socket.js builds a TLS socket as it loads, which
// parses the system's CA store: ~50 ms of CPU and several MB at the first HTTP request of every process. A request
// that did ask for HTTP/2 fails here loudly instead of quietly using it.
function unsupported() {
  throw new Error('HTTP/2 is not built into os-config-agent (http2-wrapper is left out of the bundle)');
}
module.exports = { auto: unsupported, globalAgent: undefined };
module.exports.default = module.exports;
