import { mkdirSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { resolveBaseDir } from '../../src/refresh/base-dir.js';
import { createPathMapper } from '../../src/util/rooted-path.js';
import { captureLog } from '../helpers/log-capture.js';

t.test(
  'configured > $OS_REFRESH_CONFIG_BASE_DIR > old dir when only it exists > default, all under the root',
  async (t) => {
    const root = t.testdir({});
    const paths = createPathMapper(root);
    const captured = captureLog();
    t.equal(
      await resolveBaseDir({ configured: '/x/configured', env: { OS_REFRESH_CONFIG_BASE_DIR: '/e' }, paths }),
      '/x/configured',
    );
    t.equal(
      await resolveBaseDir({ env: { OS_REFRESH_CONFIG_BASE_DIR: '/from/env' }, paths }),
      path.join(root, 'from/env'),
    );
    t.equal(
      await resolveBaseDir({ env: { OS_REFRESH_CONFIG_BASE_DIR: '' }, paths }),
      path.join(root, 'usr/libexec/os-refresh-config'),
      'empty means unset',
    );
    t.equal(await resolveBaseDir({ env: {}, paths }), path.join(root, 'usr/libexec/os-refresh-config'));
    mkdirSync(path.join(root, 'opt/stack/os-config-refresh'), { recursive: true });
    t.equal(
      await resolveBaseDir({ env: {}, paths, log: captured.log }),
      path.join(root, 'opt/stack/os-config-refresh'),
    );
    t.equal(captured.lines.filter((l) => l.msg === 'deprecated base directory in use').length, 1);
    mkdirSync(path.join(root, 'usr/libexec/os-refresh-config'), { recursive: true });
    t.equal(
      await resolveBaseDir({ env: {}, paths }),
      path.join(root, 'usr/libexec/os-refresh-config'),
      'the new one wins once it exists',
    );
  },
);
