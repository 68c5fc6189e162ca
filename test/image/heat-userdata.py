#!/usr/bin/python3
# Prints the user-data Heat gives a server, built by Heat itself: the installed heat package's
# NovaClientPlugin.build_userdata. With `user_data_format: SOFTWARE_CONFIG` (the default here): cloud-config,
# boothook, Heat's part-handler, and the server metadata as the `cfn-init-data` part; the builder never touches the
# plugin instance, so no engine context is needed. With HEAT_CFNTOOLS, the CloudFormation-style server: the same plus
# the template's user_data as `cfn-userdata` (run by Heat's loguserdata.py), `cfn-metadata-server` and `cfn-boto-cfg`;
# the only thing the builder asks the engine for, heat-api-cfn's URL, is given on the command line.
#
# Usage: heat-userdata.py METADATA_JSON_FILE [HEAT_CFNTOOLS USER_DATA_FILE CFN_METADATA_SERVER_URL] > user-data
import json
import sys

import heat.common.config  # noqa: F401 (registers the instance_connection_* options the builder reads)
from heat.engine.clients.os.nova import NovaClientPlugin


class _Engine:
    """What build_userdata reads of its plugin for HEAT_CFNTOOLS: context.clients.client_plugin('heat')."""

    def __init__(self, cfn_url):
        plugin = type('HeatPlugin', (), {'get_cfn_metadata_server_url': lambda self: cfn_url})()
        clients = type('Clients', (), {'client_plugin': lambda self, name: plugin})()
        self.context = type('Context', (), {'clients': clients})()


def main() -> int:
    if len(sys.argv) not in (2, 5) or (len(sys.argv) == 5 and sys.argv[2] != 'HEAT_CFNTOOLS'):
        print('usage: heat-userdata.py METADATA_JSON_FILE [HEAT_CFNTOOLS USER_DATA_FILE CFN_METADATA_SERVER_URL]',
              file=sys.stderr)
        return 2
    with open(sys.argv[1], encoding='utf-8') as f:
        metadata = json.load(f)
    if len(sys.argv) == 2:
        sys.stdout.write(
            NovaClientPlugin.build_userdata(None, metadata, userdata='', user_data_format='SOFTWARE_CONFIG'))
        return 0
    with open(sys.argv[3], encoding='utf-8') as f:
        userdata = f.read()
    sys.stdout.write(NovaClientPlugin.build_userdata(
        _Engine(sys.argv[4]), metadata, userdata=userdata, user_data_format='HEAT_CFNTOOLS'))
    return 0


if __name__ == '__main__':
    sys.exit(main())
