#!/bin/bash
# The boot test against real Heat, end to end: builds the image with cloud-init (NoCloud) and the script hook
# (test/image/build-image.sh, which also checks the unpacked tree in a chroot), reports what our elements add to it,
# then runs test/image/heat-boot.itest.ts: real Heat on 127.0.0.1, the tree booted under systemd-nspawn with Heat's
# own user-data in a NoCloud seed, the stack to CREATE_COMPLETE, the journal and `os-config-agent status` read inside,
# and a reboot of the same tree. Needs root, the real-Heat packages (test/integration/heat/install.sh) and
# systemd-container. See test/image/README.md, "Boot against real Heat".
#
# Usage: test/image/heat-boot.sh [--no-build] [WORK_DIR]     (default /var/tmp/oca-heat-image)

set -eu
set -o pipefail

repo=$(cd "$(dirname "$0")/../.." && pwd)
build=1
if [ "${1:-}" = --no-build ]; then
    build=0
    shift
fi
work=${1:-/var/tmp/oca-heat-image}
tree=${work}/tree

fail() {
    echo "heat-boot: $*" >&2
    exit 1
}

[ "$(id -u)" = 0 ] || fail "run as root (diskimage-builder, systemd-nspawn)"
command -v systemd-nspawn > /dev/null || fail "systemd-nspawn is missing: apt-get install -y systemd-container"

if [ "${build}" = 1 ]; then
    # python3-pkg-resources and python3-distutils: what Heat's loguserdata.py, which runs a HEAT_CFNTOOLS server's
    # user-data script, imports (heat-cfntools' dependencies bring them into images that have it; this one has not).
    OS_CONFIG_AGENT_IMAGE_CLOUD_INIT=1 OS_CONFIG_AGENT_IMAGE_ELEMENTS="heat-config-script heat-config-cfn-init" \
        OS_CONFIG_AGENT_IMAGE_PACKAGES=python3-pkg-resources,python3-distutils "${repo}/test/image/build-image.sh" "${work}"
else
    (cd "${repo}" && node scripts/build.mjs)
fi
[ -x "${tree}/usr/bin/cloud-init" ] || fail "${tree} has no cloud-init: run without --no-build"

# What the os-config-agent, heat-config-script and heat-config-cfn-init elements put in the image (KiB, apparent sizes).
kib() {
    du -sk --apparent-size "$@" 2> /dev/null | awk '{ n += $1 } END { print n + 0 }'
}
agent_all=$(kib "${tree}/opt/os-config-agent")
node_part=$(kib "${tree}/opt/os-config-agent/node")
ours_rest=$(kib "${tree}/usr/lib/systemd/system/os-config-agent.service" "${tree}/etc/os-collect-config.conf" \
    "${tree}/var/lib/heat-config/hooks")
node_version=$(chroot "${tree}" /opt/os-config-agent/bin/node --version 2> /dev/null || echo "not runnable")
echo "heat-boot: image tar $(du -m "${work}/out/image.tar" | cut -f1) MiB; our elements add $(((agent_all + ours_rest) / 1024)) MiB" \
    "($((agent_all + ours_rest - node_part)) KiB without the Node.js ${node_version} runtime of $((node_part / 1024)) MiB;" \
    "bundle $(kib "${tree}/opt/os-config-agent/lib") KiB, hooks $(kib "${tree}/var/lib/heat-config/hooks") KiB)"

cd "${repo}"
OCA_IMAGE_WORK="${work}" npx tap --disable-coverage --timeout=600 test/image/heat-boot.itest.ts
