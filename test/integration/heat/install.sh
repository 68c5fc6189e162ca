#!/usr/bin/env bash
# Installs what the real-Heat integration tests need from Debian's packages: Heat (engine, native API, CFN
# API), Keystone, Swift (for the TempURL transports), the OpenStack CLI, PostgreSQL and the reference
# os-collect-config (the harness's self-check). Idempotent: does nothing when every package is there.
# Services are started by the test harness itself, never by the packages (there is no init system in CI).
set -euo pipefail

packages=(heat-api heat-api-cfn heat-engine keystone python3-openstackclient python3-heatclient
          postgresql python3-psycopg2 python3-os-collect-config
          swift-proxy swift-account swift-container swift-object)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ "${#missing[@]}" -eq 0 ]; then
  echo "real-heat install: all packages present"
  exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
  echo "real-heat install: missing ${missing[*]}; run this script as root (it uses apt-get)" >&2
  exit 1
fi

# Debian maintainer scripts try to start the daemons they install; policy-rc.d answering 101 forbids that.
# A policy file that was already there is kept as it was.
policy=/usr/sbin/policy-rc.d
created_policy=0
if [ ! -e "$policy" ]; then
  printf '#!/bin/sh\nexit 101\n' > "$policy"
  chmod 755 "$policy"
  created_policy=1
fi
cleanup() { if [ "$created_policy" = 1 ]; then rm -f "$policy"; fi; }
trap cleanup EXIT

export DEBIAN_FRONTEND=noninteractive
echo "real-heat install: installing ${missing[*]}"
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${packages[@]}" >/dev/null
echo "real-heat install: done"
