#!/usr/bin/python3
# Heat's own client and engine code for test/image/pristine-boot.itest.ts, so that nothing a user's tools would do is
# imitated by the test:
#
#   pristine-heat.py stack-request TEMPLATE ENV...   prints, as JSON, the body `openstack stack create -e ENV... -t
#       TEMPLATE` sends (python-heatclient's template_utils: the template, the environments merged, and every file they
#       reference — the nested template of the resource_registry and its get_file fragments — under absolute URLs)
#   pristine-heat.py user-data METADATA_JSON CONFIG_FILE   prints the user-data OS::Nova::Server gives a server with
#       `user_data_format: SOFTWARE_CONFIG` and `user_data: {get_attr: [boot_config, config]}` (the installed Heat's
#       NovaClientPlugin.build_userdata with the software config's text as the template's user_data; that format never
#       touches the plugin instance, so no engine context is needed)
import json
import sys


def stack_request(template, envs):
    from heatclient.common import template_utils

    tpl_files, tpl = template_utils.process_template_path(template)
    env_files, env = template_utils.process_multiple_environments_and_files(env_paths=envs)
    return {'template': tpl, 'files': {**tpl_files, **env_files}, 'environment': env}


def user_data(metadata_file, config_file):
    from heat.engine.clients.os.nova import NovaClientPlugin

    with open(metadata_file, encoding='utf-8') as f:
        metadata = json.load(f)
    with open(config_file, encoding='utf-8') as f:
        config = f.read()
    return NovaClientPlugin.build_userdata(None, metadata, userdata=config, user_data_format='SOFTWARE_CONFIG')


def main():
    if len(sys.argv) >= 4 and sys.argv[1] == 'stack-request':
        # File contents come back as bytes; heatclient's own JSON encoder sends them as text.
        json.dump(stack_request(sys.argv[2], sys.argv[3:]), sys.stdout, default=lambda b: b.decode('utf-8'))
        return 0
    if len(sys.argv) == 4 and sys.argv[1] == 'user-data':
        sys.stdout.write(user_data(sys.argv[2], sys.argv[3]))
        return 0
    print('usage: pristine-heat.py stack-request TEMPLATE ENV... | user-data METADATA_JSON CONFIG_FILE', file=sys.stderr)
    return 2


if __name__ == '__main__':
    sys.exit(main())
