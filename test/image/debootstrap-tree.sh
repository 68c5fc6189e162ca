#!/bin/bash
# A stock Debian bookworm system for the pristine-image tests (test/image/package-boot.itest.ts and
# pristine-boot.itest.ts): `debootstrap --variant=minbase` with systemd as init, D-Bus, cloud-init and what a stock
# cloud image has for fetching files (curl, CA certificates), and NOTHING of ours: no element, no agent, no hook.
# The result is cached as a tarball in the work directory, keyed by the package list, so a second run does not
# debootstrap again; each test unpacks a fresh copy of it with test/image/debootstrap-tree.sh --unpack.
#
# Usage: test/image/debootstrap-tree.sh [WORK_DIR]                    builds (or reuses) WORK_DIR/bookworm-<key>.tar
#        test/image/debootstrap-tree.sh --unpack WORK_DIR DEST        a fresh tree from the cached tarball at DEST
#        test/image/debootstrap-tree.sh --cached [WORK_DIR]           exit 0 if the tarball is already made
# WORK_DIR defaults to /var/tmp/oca-pristine. The mirror is the one apt already uses (deb822 sources or
# sources.list); OCA_PRISTINE_MIRROR overrides it. Prints the tarball's path on its last line.

set -eu
set -o pipefail

fail() {
    echo "debootstrap-tree: $*" >&2
    exit 1
}

[ "$(id -u)" = 0 ] || fail "run as root (debootstrap)"

# What a stock bookworm cloud image brings that the tests rely on. cloud-init pulls in python3; python3-cffi-backend is
# named because debootstrap does not resolve virtual packages (python3-cryptography depends on the API it provides).
include=systemd,systemd-sysv,dbus,cloud-init,python3-cffi-backend,curl,ca-certificates,iproute2,procps
# Bump when the tree's own configuration below changes: the key names the tarball.
layout=1
key=$(printf '%s %s' "${include}" "${layout}" | sha256sum | cut -c1-12)

if [ "${1:-}" = --cached ]; then
    # Exit 0 when WORK_DIR already holds the tarball for this package list (a run skips debootstrap), 1 otherwise.
    [ -f "${2:-/var/tmp/oca-pristine}/bookworm-${key}.tar" ]
    exit
fi
if [ "${1:-}" = --unpack ]; then
    work=${2:?usage: debootstrap-tree.sh --unpack WORK_DIR DEST}
    dest=${3:?usage: debootstrap-tree.sh --unpack WORK_DIR DEST}
    tarball=${work}/bookworm-${key}.tar
    [ -f "${tarball}" ] || fail "no cached tree ${tarball}: run test/image/debootstrap-tree.sh ${work} first"
    rm -rf "${dest}"
    mkdir -p "${dest}"
    tar --numeric-owner --xattrs -xpf "${tarball}" -C "${dest}"
    echo "${dest}"
    exit 0
fi

work=${1:-/var/tmp/oca-pristine}
tarball=${work}/bookworm-${key}.tar
if [ -f "${tarball}" ]; then
    echo "debootstrap-tree: reusing ${tarball}" >&2
    echo "${tarball}"
    exit 0
fi
command -v debootstrap > /dev/null || fail "debootstrap is missing: apt-get install -y debootstrap"

# The bookworm mirror apt already uses.
mirror_of_apt() {
    if [ -f /etc/apt/sources.list.d/debian.sources ]; then
        awk '
            /^URIs:/ { uri = $2 }
            /^Suites:/ { for (i = 2; i <= NF; i++) if ($i == "bookworm") { print uri; exit } }
        ' /etc/apt/sources.list.d/debian.sources
    fi
    if [ -f /etc/apt/sources.list ]; then
        awk '$1 == "deb" && $3 == "bookworm" { print $2; exit }' /etc/apt/sources.list
    fi
}
mirror=${OCA_PRISTINE_MIRROR:-$(mirror_of_apt | head -n 1)}
[ -n "${mirror}" ] || fail "no bookworm mirror in apt's sources: set OCA_PRISTINE_MIRROR"

mkdir -p "${work}/debs"
build=${work}/debootstrap.tmp
# A failed run may leave debootstrap's /proc and /sys mounted in its target: unmount before removing, and never
# leave the target's file system while removing.
cleanup() {
    { grep -o " ${build}/[^ ]*" /proc/self/mounts || true; } | sort -r | while read -r m; do umount -l "${m}" || true; done
    rm -rf --one-file-system "${build}"
}
cleanup
trap cleanup EXIT
start=$(date +%s)
echo "debootstrap-tree: debootstrap bookworm from ${mirror} (log: ${work}/debootstrap.log)" >&2
if ! debootstrap --variant=minbase --cache-dir="${work}/debs" --include="${include}" bookworm "${build}" "${mirror}" > "${work}/debootstrap.log" 2>&1; then
    tail -n 30 "${work}/debootstrap.log" >&2
    fail "debootstrap failed (full log: ${work}/debootstrap.log)"
fi

# What a cloud image's build leaves configured, and no more:
# - cloud-init reads the NoCloud seed and nothing else. Stock images list many datasources and probe the network for
#   them; on a test machine that would mean asking 169.254.169.254, which must never happen.
cat > "${build}/etc/cloud/cloud.cfg.d/90-pristine-test-datasource.cfg" <<'EOF'
# test/image/debootstrap-tree.sh: the tests hand the system a NoCloud seed; no network datasource is ever probed.
datasource_list: [ NoCloud, None ]
EOF
# - no machine identity baked in: systemd makes one at first boot, as on a real first boot.
: > "${build}/etc/machine-id"
rm -f "${build}/var/lib/dbus/machine-id"
# - the downloaded packages are not kept (an image build cleans apt's cache too).
rm -f "${build}"/var/cache/apt/archives/*.deb

tar --numeric-owner --xattrs -cpf "${tarball}.tmp" -C "${build}" .
mv "${tarball}.tmp" "${tarball}"
echo "debootstrap-tree: built ${tarball} in $(($(date +%s) - start)) s ($(du -m "${tarball}" | cut -f1) MiB)" >&2
echo "${tarball}"
