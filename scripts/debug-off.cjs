/* global module */
// Stand-in for the `debug` package in the bundle (scripts/build.mjs). The proxy agents trace through `debug`, which
// writes to stderr when DEBUG is set, outside the agent's log scrubbing, and their traces include the proxy URL with
// its credentials. The agent logs through pino only; these traces are never enabled.
function createDebug() {
  const off = () => {};
  off.enabled = false;
  off.extend = createDebug;
  return off;
}
createDebug.enabled = () => false;
createDebug.enable = () => {};
createDebug.disable = () => '';
module.exports = createDebug;
module.exports.default = createDebug;
