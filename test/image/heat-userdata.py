#!/usr/bin/python3
# Prints the user-data Heat gives a server with `user_data_format: SOFTWARE_CONFIG`, built by Heat itself: the
# installed heat package's NovaClientPlugin.build_userdata (cloud-config, boothook, Heat's part-handler, the
# template's user_data and the server metadata as the `cfn-init-data` part). For that format the builder never
# touches the plugin instance, so no engine context is needed.
#
# Usage: heat-userdata.py METADATA_JSON_FILE > user-data
import json
import sys

from heat.engine.clients.os.nova import NovaClientPlugin


def main() -> int:
    if len(sys.argv) != 2:
        print('usage: heat-userdata.py METADATA_JSON_FILE', file=sys.stderr)
        return 2
    with open(sys.argv[1], encoding='utf-8') as f:
        metadata = json.load(f)
    sys.stdout.write(NovaClientPlugin.build_userdata(None, metadata, userdata='', user_data_format='SOFTWARE_CONFIG'))
    return 0


if __name__ == '__main__':
    sys.exit(main())
