#!/bin/sh
# Installs os-config-agent from its Debian package on a stock cloud image at first boot, and starts it.
# Run by cloud-init's final stage (cloud-final.service) as part of the server's user-data; Heat fills in the two
# values below from the template's parameters (str_replace).
#
# os-config-agent.service is ordered after cloud-final.service, so waiting here for it to start would wait for this
# very script to end: the start is queued (--no-block) and happens once cloud-init has finished. By then Heat's
# part-handler has long written /var/lib/heat-cfntools/cfn-init-data (cloud-init.service), which the agent's first
# cycle reads to configure itself for the server's transport.
set -eu

url='__OS_CONFIG_AGENT_DEB_URL__'
sha256='__OS_CONFIG_AGENT_DEB_SHA256__'

log() {
    echo "install-os-config-agent: $*" >&2
}

work=$(mktemp -d /var/tmp/os-config-agent-install.XXXXXX)
trap 'rm -rf "$work"' EXIT
deb=$work/os-config-agent.deb

# curl or wget, as stock images have one of them; python3 (which cloud-init needs) otherwise. Each gives up after
# ten minutes and retries failed connections, as a server's network may come up slowly.
log "downloading ${url%%\?*}"
if command -v curl > /dev/null 2>&1; then
    curl -fsS --location --retry 5 --retry-connrefused --connect-timeout 30 --max-time 600 -o "$deb" "$url"
elif command -v wget > /dev/null 2>&1; then
    wget -q --tries=5 --retry-connrefused --timeout=30 -O "$deb" "$url"
else
    python3 - "$url" "$deb" <<'EOF'
import shutil, sys, urllib.request
with urllib.request.urlopen(sys.argv[1], timeout=600) as response, open(sys.argv[2], 'wb') as out:
    shutil.copyfileobj(response, out)
EOF
fi

if [ -n "$sha256" ]; then
    if ! echo "$sha256  $deb" | sha256sum -c --status -; then
        log "the downloaded package does not have the sha256 given in os_config_agent_deb_sha256 ($sha256); not installing it"
        exit 1
    fi
    log "sha256 checked"
fi

# A local .deb whose dependencies (libc, libstdc++, systemd) every systemd-based image has: no package lists needed.
# If some are missing all the same, fetch the lists once and try again.
install_deb() {
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends -o Dpkg::Options::=--force-confold "$deb"
}
if ! install_deb; then
    log "apt-get install failed; updating the package lists and trying once more"
    apt-get update
    install_deb
fi

# The package enables the unit and queues its start itself; a policy-rc.d (as image builds have) may have kept it
# from doing so, and this server is booting for real. A start already queued is not queued twice.
systemctl enable os-config-agent.service
systemctl --no-block start os-config-agent.service
log "installed $(os-config-agent --version); the agent starts once cloud-init has finished"
