#!/bin/bash
# Issue 21 in booted systems: the Debian package and the pristine-image boot, each on a fresh copy of one stock
# debootstrapped bookworm (test/image/debootstrap-tree.sh, cached in the work directory):
#   test/image/package-boot.itest.ts    apt install / reinstall / remove / purge of the .deb, systemd as PID 1
#   test/image/pristine-boot.itest.ts   cloud-init + boot-config/ installs the .deb at first boot; real Heat stack
# Builds the agent and the package first (gzip: quicker to make; the contents are those of `npm run package`).
# Needs root, debootstrap, systemd-container and the real-Heat packages (test/integration/heat/install.sh).
# See docs/pristine-boot.md.
#
# Usage: test/image/pristine-boot.sh [WORK_DIR]     (default /var/tmp/oca-pristine)

set -eu
set -o pipefail

repo=$(cd "$(dirname "$0")/../.." && pwd)
work=${1:-/var/tmp/oca-pristine}

fail() {
    echo "pristine-boot: $*" >&2
    exit 1
}

[ "$(id -u)" = 0 ] || fail "run as root (debootstrap, systemd-nspawn)"
command -v systemd-nspawn > /dev/null || fail "systemd-nspawn is missing: apt-get install -y systemd-container"
command -v debootstrap > /dev/null || fail "debootstrap is missing: apt-get install -y debootstrap"

start=$(date +%s)
bash "${repo}/test/image/debootstrap-tree.sh" "${work}" > /dev/null
tree_done=$(date +%s)
echo "pristine-boot: stock bookworm tree ready in $((tree_done - start)) s"

cd "${repo}"
# OCA_AGENT_BUILT=1: dist/ is already built (as in CI, where the image boot test runs beside this one).
if [ "${OCA_AGENT_BUILT:-0}" != 1 ]; then
    node scripts/build.mjs > /dev/null
fi
rm -rf "${work}/deb"
node scripts/package-deb.mjs --out "${work}/deb" --compress gzip
deb_done=$(date +%s)
echo "pristine-boot: agent and package built in $((deb_done - tree_done)) s"

status=0
# debootstrap and npm above may need this machine's proxy; the tests talk only to loopback and must not be proxied.
env -u http_proxy -u https_proxy -u HTTP_PROXY -u HTTPS_PROXY -u no_proxy -u NO_PROXY \
    OCA_PRISTINE_WORK="${work}" npx tap --disable-coverage --jobs=1 --timeout=600 test/image/package-boot.itest.ts test/image/pristine-boot.itest.ts || status=$?
echo "pristine-boot: tests exit ${status} in $(($(date +%s) - deb_done)) s; $(($(date +%s) - start)) s in all"
exit "${status}"
