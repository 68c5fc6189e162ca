#!/bin/bash
# Builds a real Debian bookworm image (tar) with the os-config-agent elements, using Debian's diskimage-builder,
# then unpacks it and checks what the elements installed, running the agent inside the tree with chroot.
# Slow (about 3 minutes cold, 2 warm) and needs root and Debian's package mirror: not part of the tap suite.
# See test/image/README.md.
#
# Usage: test/image/build-image.sh [WORK_DIR]     (default /var/tmp/os-config-agent-image)
# Node.js for the image: nothing to set. Like any builder's first build, the element finds bookworm's nodejs too old
# and fetches the official binary from the npm registry (cached in WORK_DIR/cache). Given, these are passed on:
# DIB_OS_CONFIG_AGENT_NODE_FROM, DIB_OS_CONFIG_AGENT_NODE_TARBALL, DIB_OS_CONFIG_AGENT_NODE_REGISTRY, the proxy
# variables, DIB_OFFLINE.
# Hook elements: OS_CONFIG_AGENT_IMAGE_ELEMENTS (default: every heat-config-* element here; empty: none).
# OS_CONFIG_AGENT_IMAGE_CLOUD_INIT=1 also adds DIB's cloud-init and cloud-init-datasources elements with the NoCloud
# datasource only (what test/image/heat-boot.itest.ts boots); default: no cloud-init.

set -eu
set -o pipefail

repo=$(cd "$(dirname "$0")/../.." && pwd)
work=${1:-/var/tmp/os-config-agent-image}
elements=${OS_CONFIG_AGENT_IMAGE_ELEMENTS-heat-config-script heat-config-puppet heat-config-chef heat-config-salt heat-config-ansible}
# Extra distribution packages for the image (OS_CONFIG_AGENT_IMAGE_PACKAGES, comma-separated; default none).
packages=${OS_CONFIG_AGENT_IMAGE_PACKAGES:-}
cloud_init=${OS_CONFIG_AGENT_IMAGE_CLOUD_INIT:-0}
cloud_elements=
if [ "${cloud_init}" = 1 ]; then
    # NoCloud alone: cloud-init must never look for a metadata service on the network.
    cloud_elements="cloud-init cloud-init-datasources"
fi

fail() {
    echo "build-image: $*" >&2
    exit 1
}

[ "$(id -u)" = 0 ] || fail "run as root (diskimage-builder mounts and chroots)"
for tool in disk-image-create debootstrap sudo rsync; do
    command -v "${tool}" > /dev/null || fail "${tool} is missing: apt-get install -y python3-diskimage-builder debootstrap qemu-utils squashfs-tools sudo rsync"
done

# The mirrors apt already uses (deb822 sources or sources.list), unless given.
mirror_for() {
    local suite=$1
    if [ -f /etc/apt/sources.list.d/debian.sources ]; then
        awk -v suite="${suite}" '
            /^URIs:/ { uri = $2 }
            /^Suites:/ { for (i = 2; i <= NF; i++) if ($i == suite) { print uri; exit } }
        ' /etc/apt/sources.list.d/debian.sources
    fi
    if [ -f /etc/apt/sources.list ]; then
        awk -v suite="${suite}" '$1 == "deb" && $3 == suite { print $2; exit }' /etc/apt/sources.list
    fi
}
mirror=${DIB_DISTRIBUTION_MIRROR:-$(mirror_for bookworm | head -n 1)}
security=${OS_CONFIG_AGENT_SECURITY_MIRROR:-$(mirror_for bookworm-security | head -n 1)}
[ -n "${mirror}" ] || fail "no bookworm mirror in apt's sources: set DIB_DISTRIBUTION_MIRROR"
[ -n "${security}" ] || security=${mirror}-security

# OCA_AGENT_BUILT=1: dist/ is already built (CI built it in its unit run and runs the pristine test beside this one,
# which reads dist/: building again here would rewrite it under that test's feet).
if [ "${OCA_AGENT_BUILT:-0}" != 1 ]; then
    echo "build-image: building the agent"
    (cd "${repo}" && node scripts/build.mjs)
fi

mkdir -p "${work}/tmp" "${work}/cache" "${work}/out"
# DIB 3.13's default for bookworm names the security suite wrongly (bookworm/updates) and adds backports; these
# lines ("name:sources.list line") replace it.
apt_sources="default:deb ${mirror} bookworm main
updates:deb ${mirror} bookworm-updates main
security:deb ${security} bookworm-security main"

# Only what the caller set: the element's own defaults are what is tested.
passed_env=()
for name in DIB_OS_CONFIG_AGENT_NODE_FROM DIB_OS_CONFIG_AGENT_NODE_TARBALL DIB_OS_CONFIG_AGENT_NODE_REGISTRY DIB_OFFLINE \
    http_proxy https_proxy no_proxy; do
    if [ -n "${!name:-}" ]; then
        passed_env+=("${name}=${!name}")
    fi
done

echo "build-image: disk-image-create (log: ${work}/build.log)"
start=$(date +%s)
# Debian's /usr/bin/python3 and a plain PATH: DIB's scripts must not meet version-manager shims (nor npm: the
# element needs no Node.js tooling on the build host).
if ! env -i \
    HOME=/root \
    PATH="/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" \
    TMPDIR="${work}/tmp" \
    DIB_PYTHON_EXEC=/usr/bin/python3 \
    ELEMENTS_PATH="${repo}/elements" \
    DIB_RELEASE=bookworm \
    DIB_DEBIAN_COMPONENTS=main \
    DIB_DISTRIBUTION_MIRROR="${mirror}" \
    DIB_APT_SOURCES_CONF="${apt_sources}" \
    DIB_DEBOOTSTRAP_CACHE=1 \
    DIB_DEBIAN_USE_DEBOOTSTRAP_CACHE=1 \
    OVERWRITE_OLD_IMAGE=1 \
    DIB_OS_CONFIG_AGENT_SOURCE="${repo}" \
    DIB_CLOUD_INIT_DATASOURCES=NoCloud \
    "${passed_env[@]}" \
    disk-image-create -t tar -o "${work}/out/image" --image-cache "${work}/cache" ${packages:+-p "${packages}"} \
    debian-minimal ${cloud_elements} os-config-agent ${elements} > "${work}/build.log" 2>&1; then
    tail -n 40 "${work}/build.log" >&2
    fail "disk-image-create failed (full log: ${work}/build.log)"
fi
build_seconds=$(($(date +%s) - start))
echo "build-image: built ${work}/out/image.tar in ${build_seconds} s"
echo "${build_seconds}" > "${work}/build-seconds"

tree=${work}/tree
rm -rf "${tree}"
mkdir -p "${tree}"
tar -xf "${work}/out/image.tar" -C "${tree}"
mkdir -p "${tree}/proc" "${tree}/sys"

passed=0
failed=0
check() {
    local what=$1
    shift
    if "$@" > /dev/null 2>&1; then
        passed=$((passed + 1))
        echo "ok - ${what}"
    else
        failed=$((failed + 1))
        echo "not ok - ${what}"
    fi
}
mode_is() {
    [ "$(stat -c %a "$1")" = "$2" ]
}
node_major_at_least_20() {
    local v
    v=$(chroot "${tree}" /opt/os-config-agent/bin/node -e 'process.stdout.write(process.versions.node)')
    [ "${v%%.*}" -ge 20 ]
}
version_matches() {
    # `os-config-agent 0.2.0`, `os-collect-config (os-config-agent) 0.2.0`: the project's version last.
    local said
    said=$(chroot "${tree}" "$1" --version)
    [ "${said##* }" = "$(cd "${repo}" && node -p 'require("./package.json").version')" ] && [ "${said#*os-config-agent}" != "${said}" ]
}

node_line_is_ours() {
    local v line
    v=$(chroot "${tree}" /opt/os-config-agent/bin/node -e 'process.stdout.write(process.versions.node)')
    line=$(grep -v '^#' "${repo}/elements/os-config-agent/os-config-agent-data/node-lts-line" | tr -d '[:space:]')
    [ "${v%%.*}" = "${line}" ] && [ "$(readlink "${tree}/opt/os-config-agent/bin/node")" = ../node/bin/node ]
}
only_node_and_licence() {
    [ "$(cd "${tree}/opt/os-config-agent/node" && find . -mindepth 1 | sort | tr '\n' ' ')" = "./LICENSE ./bin ./bin/node " ]
}
check "Node.js >= 20 in the image" node_major_at_least_20
if [ -z "${DIB_OS_CONFIG_AGENT_NODE_FROM:-}${DIB_OS_CONFIG_AGENT_NODE_TARBALL:-}" ]; then
    # bookworm's nodejs is 18: by default the element installs the official binary and not the old package.
    check "the official Node.js of the element's LTS line runs the agent (no Node variable set)" node_line_is_ours
    check "only bin/node and its LICENSE of the Node.js archive are installed" only_node_and_licence
    check "the distribution's old nodejs is not installed" test ! -e "${tree}/usr/bin/node"
    check "the build log says which Node.js and why" grep -q "the agent runs with the official Node.js v.*the distribution's nodejs is 18" "${work}/build.log"
fi
for name in os-config-agent os-collect-config os-apply-config os-refresh-config; do
    check "${name} --version runs in the image" version_matches "/usr/local/bin/${name}"
done
check "the unit is enabled" systemctl --root="${tree}" is-enabled os-config-agent.service
check "systemd-analyze verify on the unit" systemd-analyze verify --root="${tree}" os-config-agent.service
check "/etc/os-collect-config.conf is 0600" mode_is "${tree}/etc/os-collect-config.conf" 600
check "/var/lib/os-collect-config is 0700" mode_is "${tree}/var/lib/os-collect-config" 700
check "/var/lib/heat-config/deployed is 0700" mode_is "${tree}/var/lib/heat-config/deployed" 700
for element in ${elements}; do
    group=${element#heat-config-}
    check "the ${group} hook is installed, 0755" mode_is "${tree}/var/lib/heat-config/hooks/${group}" 755
done
hook_runs_alone() {
    printf '%s' '{"id": "image-check", "config": "#!/bin/sh\necho hook-ok"}' |
        chroot "${tree}" env PATH=/opt/os-config-agent/bin:/usr/bin:/bin OS_CONFIG_AGENT_ROOT=/tmp/hook-check \
            /var/lib/heat-config/hooks/script | grep -Eq '"deploy_stdout": ?"hook-ok'
}
only_hooks() {
    local expected actual
    expected=$(for element in ${elements}; do echo "${element#heat-config-}"; done | sort | tr '\n' ' ')
    actual=$(ls "${tree}/var/lib/heat-config/hooks" | sort | tr '\n' ' ')
    [ "${expected}" = "${actual}" ]
}
check "the hooks directory holds only the hooks" only_hooks
case " ${elements} " in
    *" heat-config-script "*) check "a hook runs alone with the image's Node.js (a deployment through hooks/script)" hook_runs_alone ;;
esac
check "collect --print of local data works in the image" \
    chroot "${tree}" /usr/local/bin/os-config-agent collect --print local
if [ "${cloud_init}" = 1 ]; then
    check "cloud-init is installed" chroot "${tree}" cloud-init --version
    check "cloud-init's boot stages are enabled" systemctl --root="${tree}" is-enabled cloud-init-local.service cloud-init.service cloud-config.service cloud-final.service
    check "cloud-init is limited to the NoCloud datasource" grep -q 'datasource_list: *\[ *NoCloud, None \]' "${tree}/etc/cloud/cloud.cfg.d/91-dib-cloud-init-datasources.cfg"
fi

echo "${passed} passed, ${failed} failed"
[ "${failed}" = 0 ]
