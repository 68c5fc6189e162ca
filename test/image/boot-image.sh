#!/bin/bash
# Boots the tree test/image/build-image.sh unpacked, with systemd as PID 1 in a container (systemd-nspawn, private
# network: nothing leaves the container), and checks the unit at run time: the agent starts at boot, logs to the
# journal, configures itself from Heat boot data left where cloud-init's part-handler puts it, survives a
# `systemctl reload`, and stops cleanly at poweroff. The image itself is not changed (--volatile=overlay).
#
# Usage: test/image/boot-image.sh [WORK_DIR]     (default /var/tmp/os-config-agent-image, as build-image.sh)

set -eu
set -o pipefail

work=${1:-/var/tmp/os-config-agent-image}
tree=${work}/tree

fail() {
    echo "boot-image: $*" >&2
    exit 1
}

[ "$(id -u)" = 0 ] || fail "run as root"
[ -x "${tree}/opt/os-config-agent/bin/os-config-agent" ] || fail "no built tree in ${tree}: run test/image/build-image.sh first"
command -v systemd-nspawn > /dev/null || fail "systemd-nspawn is missing: apt-get install -y systemd-container"

boot=${work}/boot
rm -rf "${boot}"
mkdir -p "${boot}/conf.d" "${boot}/heat-cfntools" "${boot}/journald"
chmod 0700 "${boot}/heat-cfntools"
# Only heat_local and local: the image's built-in list would also try the EC2 metadata service.
printf '[DEFAULT]\ncollectors = heat_local\ncollectors = local\n' > "${boot}/conf.d/boot-test.conf"
# What Heat's part-handler writes: the server metadata, here with a local-only agent section.
printf '{"os-collect-config": {"collectors": ["local"], "polling_interval": 5}, "deployments": []}\n' > "${boot}/heat-cfntools/cfn-init-data"
printf '[Journal]\nForwardToConsole=yes\nMaxLevelConsole=info\n' > "${boot}/journald/console.conf"
cat > "${boot}/probe.service" << 'EOF'
[Unit]
Description=boot probe for os-config-agent
After=os-config-agent.service
[Service]
Type=oneshot
StandardOutput=journal+console
ExecStart=/bin/sh -c 'sleep 5; echo "probe: before reload: $(systemctl is-active os-config-agent)"; systemctl reload os-config-agent; sleep 2; echo "probe: state $(systemctl show -p ActiveState --value os-config-agent) restarts $(systemctl show -p NRestarts --value os-config-agent)"; echo "probe: mode $(stat -c %%a /etc/os-collect-config.conf)"; systemctl poweroff'
EOF

echo "boot-image: booting ${tree} (console: ${boot}/console.log)"
timeout 180 systemd-nspawn -q --register=no --keep-unit --private-network --volatile=overlay -D "${tree}" \
    --bind-ro="${boot}/conf.d:/etc/os-collect-config.conf.d" \
    --bind="${boot}/heat-cfntools:/var/lib/heat-cfntools" \
    --bind-ro="${boot}/journald:/etc/systemd/journald.conf.d" \
    --bind-ro="${boot}/probe.service:/etc/systemd/system/oca-probe.service" \
    -b -- systemd.wants=oca-probe.service > "${boot}/console.log" 2>&1 || true

passed=0
failed=0
check() {
    local what=$1
    local pattern=$2
    if grep -Eq -- "${pattern}" "${boot}/console.log"; then
        passed=$((passed + 1))
        echo "ok - ${what}"
    else
        failed=$((failed + 1))
        echo "not ok - ${what}"
    fi
}
check "systemd started the agent at boot" 'Started os-config-agent\.service'
check "the agent logs to the journal under its name" 'os-config-agent\[[0-9]+\]: \{.*"msg":"agent starting"'
check "it configured itself from the boot data" '"msg":"agent configuration rewritten from os-collect-config metadata; reloading"'
check "the rewritten configuration is 0600" 'probe: mode 600'
check "it was active" 'probe: before reload: active'
check "systemctl reload reached it as SIGHUP" '"signal":"SIGHUP","msg":"reload requested"'
check "still active after the reload, never restarted" 'probe: state active restarts 0'
check "it stopped cleanly at poweroff" 'os-config-agent\.service: Deactivated successfully'

echo "${passed} passed, ${failed} failed"
[ "${failed}" = 0 ]
