import { userInfo } from 'node:os';
import t from 'tap';
import { runHookAction } from '../../src/cfntools/hook-action.js';
import type { HupHook } from '../../src/cfntools/hup-config.js';
import { HookLog, type HookLogFields } from '../../src/hooks/kit/hook-log.js';

// A cfn-hup hook's action (src/cfntools/hook-action.ts): run through the shell as its runas user, reported, never
// thrown.

function capture(): { log: HookLog; lines: Array<{ message: string; fields: HookLogFields }> } {
  const lines: Array<{ message: string; fields: HookLogFields }> = [];
  return { log: new HookLog('test', (_level, message, fields) => lines.push({ message, fields })), lines };
}

const hook = (action: string, runas = userInfo().username): HupHook => ({
  name: 'reload',
  file: '/etc/cfn/hooks.conf',
  triggers: ['post.update'],
  path: 'Resources.web.Metadata',
  resource: 'web',
  keys: [],
  runas,
  action,
  timeoutSeconds: 10,
});

t.test('the action runs; the line that names it hides the values of secret options and assignments', async (t) => {
  const { log, lines } = capture();
  const action = 'DB_PASSWORD=pw1 : /opt/aws/bin/cfn-init -s st -r web --access-key AK1 --secret-key sk1 --region r1';
  const outcome = await runHookAction(hook(action), 'post.update', { PATH: '/usr/bin:/bin' }, log);
  t.same(outcome, { hook: 'reload', ok: true, status: 'status 0' });
  const running = lines.find((l) => l.message === 'running hook action');
  t.equal(
    running?.fields.action,
    'DB_PASSWORD=[REDACTED] : /opt/aws/bin/cfn-init -s st -r web --access-key [REDACTED] --secret-key [REDACTED] --region r1',
  );
  t.notMatch(JSON.stringify(lines), /pw1|sk1/, 'in no line');
});

t.test('a failing action and an unknown runas user are reported, not thrown', async (t) => {
  const { log, lines } = capture();
  t.same(await runHookAction(hook('exit 3'), 'post.update', { PATH: '/usr/bin:/bin' }, log), {
    hook: 'reload',
    ok: false,
    status: 'status 3',
  });
  t.same(await runHookAction(hook('true', 'no-such-user-oca'), 'post.update', {}, log), {
    hook: 'reload',
    ok: false,
    status: 'no user no-such-user-oca',
  });
  t.same(
    lines.filter((l) => l.message !== 'running hook action').map((l) => l.message),
    ['hook action failed', 'hook action not run: the runas user does not exist'],
  );
});
