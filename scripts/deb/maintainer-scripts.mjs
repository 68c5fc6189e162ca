import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

// The maintainer scripts of the Debian package (docs/debian-package.md): preinst moves the settings 0.1.0's agent
// wrote into the conffile to the file of their own they now have; postinst makes the state directories and enables
// and starts (or restarts) the unit; prerm stops it on removal; postrm cleans up on purge.

const HERE = path.dirname(fileURLToPath(import.meta.url));
/** The conffile exactly as the 0.1.0 packages shipped it: put back, dpkg sees it unmodified and upgrades it quietly. */
const CONFFILE_0_1_0 = readFileSync(path.join(HERE, 'os-collect-config.conf-0.1.0'), 'utf8');

/**
 * Before 0.2.0 the agent wrote Heat's settings into /etc/os-collect-config.conf, the package's conffile, so the next
 * package that changed the conffile made dpkg ask about it (in `apt-get -y upgrade` too: a question nobody answers).
 * On an upgrade from such a version, a conffile the agent rewrote (its first line says so) moves whole to
 * /etc/os-collect-config.conf.d/00-heat.conf, where the agent now writes, and the conffile is put back as 0.1.0
 * shipped it. ${DPKG_ROOT} is dpkg's --root (empty otherwise).
 */
function preinst() {
  return `#!/bin/sh
set -e
if [ "$1" = upgrade ] && dpkg --compare-versions "$2" lt 0.2.0-1; then
    conf="\${DPKG_ROOT:-}/etc/os-collect-config.conf"
    dir="\${DPKG_ROOT:-}/etc/os-collect-config.conf.d"
    if [ -f "$conf" ] && head -n 1 "$conf" | grep -q '^# Written by os-config-agent from the os-collect-config metadata'; then
        mkdir -p "$dir"
        if [ ! -e "$dir/00-heat.conf" ]; then
            cp -p "$conf" "$dir/00-heat.conf.dpkg-new"
            chmod 0600 "$dir/00-heat.conf.dpkg-new"
            mv -f "$dir/00-heat.conf.dpkg-new" "$dir/00-heat.conf"
        fi
        cat > "$conf.dpkg-old-0.1.0" <<'OS_CONFIG_AGENT_0_1_0'
${CONFFILE_0_1_0}OS_CONFIG_AGENT_0_1_0
        chmod 0600 "$conf.dpkg-old-0.1.0"
        mv -f "$conf.dpkg-old-0.1.0" "$conf"
        echo "os-config-agent: Heat's settings moved from /etc/os-collect-config.conf to /etc/os-collect-config.conf.d/00-heat.conf"
    fi
fi
`;
}

export function maintainerScripts() {
  const postinst = `#!/bin/sh
set -e
# True when this runs under the agent's daemon, which gives its pid to everything it starts (docs/hooks.md): an
# upgrade run by one of its own deployments (apt-get upgrade in a script). Only a positive number names one process.
under_running_agent() {
    case "\${OS_CONFIG_AGENT_PID:-}" in
        '' | 0* | *[!0-9]*) return 1 ;;
    esac
    kill -0 "\${OS_CONFIG_AGENT_PID}" 2>/dev/null
}
if [ "$1" = configure ]; then
    # State directories: only root reads what Heat sends (credentials in the cache and the records).
    install -d -m 0700 /var/lib/os-config-agent /var/lib/os-collect-config /var/lib/heat-config /var/lib/heat-config/hooks
    install -d -m 0700 /var/lib/heat-config/deployed
    deb-systemd-helper unmask os-config-agent.service >/dev/null || true
    if deb-systemd-helper --quiet was-enabled os-config-agent.service; then
        deb-systemd-helper enable os-config-agent.service >/dev/null || true
    else
        deb-systemd-helper update-state os-config-agent.service >/dev/null || true
        deb-systemd-helper enable os-config-agent.service >/dev/null || true
    fi
    # Started only on a running system: an image being built (a chroot, no systemd) starts it at its first boot.
    # The start is queued, never waited for (--no-block, so not deb-systemd-invoke, which cannot pass it; policy-rc.d
    # is asked here as it would ask): the unit is ordered after cloud-final.service, and a first-boot install runs
    # inside cloud-final (boot-config/, docs/pristine-boot.md), where waiting for the start would wait forever.
    if [ -d /run/systemd/system ] && ! ischroot 2>/dev/null; then
        systemctl --system daemon-reload >/dev/null || true
        if [ -n "$2" ]; then action=try-restart; else action=start; fi
        # Restarting the unit from inside the agent's own deployment would stop the agent, and with it the
        # deployment's processes: this apt and dpkg, half-way through. The agent notices its new files once the
        # deployment is over and restarts itself then (docs/debian-package.md).
        if [ "$action" = try-restart ] && under_running_agent; then
            echo "os-config-agent: upgraded by one of the agent's own deployments; the agent (process \${OS_CONFIG_AGENT_PID}) will restart itself once its current cycle is over"
        else
            policy=0
            if [ -x /usr/sbin/policy-rc.d ]; then
                /usr/sbin/policy-rc.d os-config-agent.service "$action" || policy=$?
            fi
            # As deb-systemd-invoke: a unit the administrator disabled is not started.
            if [ "$action" = start ] && ! systemctl --system --quiet is-enabled os-config-agent.service 2>/dev/null; then
                policy=101
            fi
            if [ "$policy" = 0 ] || [ "$policy" = 104 ]; then
                systemctl --system --no-block "$action" os-config-agent.service >/dev/null || true
            fi
        fi
    fi
fi
`;
  const prerm = `#!/bin/sh
set -e
if [ -d /run/systemd/system ] && [ "$1" = remove ]; then
    deb-systemd-invoke stop os-config-agent.service >/dev/null || true
fi
`;
  const postrm = `#!/bin/sh
set -e
if [ -d /run/systemd/system ]; then
    systemctl --system daemon-reload >/dev/null || true
fi
if [ "$1" = remove ] && [ -x /usr/bin/deb-systemd-helper ]; then
    deb-systemd-helper mask os-config-agent.service >/dev/null || true
fi
if [ "$1" = purge ]; then
    if [ -x /usr/bin/deb-systemd-helper ]; then
        deb-systemd-helper purge os-config-agent.service >/dev/null || true
        deb-systemd-helper unmask os-config-agent.service >/dev/null || true
    fi
    # The agent's own state and the settings it wrote go with a purge; the metadata cache and heat-config's files stay
    # (other tools share them), and so do the operator's own files in /etc/os-collect-config.conf.d.
    rm -rf /var/lib/os-config-agent
    rm -f /etc/os-collect-config.conf.d/00-heat.conf
fi
`;
  return { preinst: preinst(), postinst, prerm, postrm };
}
