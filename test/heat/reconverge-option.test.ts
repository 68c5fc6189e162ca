import t from 'tap';
import { loadConfig } from '../../src/config/load.js';
import { parseDeployment } from '../../src/heat/deployment.js';
import { reconvergeIntervalOf, reconvergeOption } from '../../src/heat/reconverge-option.js';
import { deployment } from '../helpers/deploy-fixtures.js';

// A deployment's options.reconverge_interval: seconds (at least 60) as a number or plain decimal text, 0 for off,
// absent for the group's default; anything else is a problem naming the option, which fails the deployment
// (test/deploy/reconverge/).

t.test('a number of seconds, as a number or as text; absent or null: not given', async (t) => {
  t.same(reconvergeOption({ reconverge_interval: 1800 }), { given: true, seconds: 1800 });
  t.same(reconvergeOption({ reconverge_interval: ' 90.5 ' }), { given: true, seconds: 90.5 });
  t.same(reconvergeOption({ reconverge_interval: '60' }), { given: true, seconds: 60 }, 'the least interval');
  t.same(reconvergeOption({ reconverge_interval: 0 }), { given: true, seconds: 0 });
  t.same(reconvergeOption({}), { given: false });
  t.same(reconvergeOption({ reconverge_interval: null }), { given: false });
  t.same(reconvergeOption(undefined), { given: false });
  t.same(reconvergeOption(['not', 'an', 'object']), { given: false });
});

t.test('not a positive number of seconds: a problem naming the option and what it was', async (t) => {
  const bad: Array<[unknown, RegExp]> = [
    [-5, /options\.reconverge_interval is -5, not a plain decimal number of seconds/],
    ['soon', /options\.reconverge_interval is "soon", not a plain decimal number/],
    ['', /is "", not a plain decimal number/],
    // Hex, exponents and signs, which Number() reads: not how anyone writes an interval.
    ['0x10', /is "0x10", not a plain decimal number of seconds/],
    ['1e3', /is "1e3", not a plain decimal number/],
    ['+120', /is "\+120", not a plain decimal number/],
    // So short that the tool would run back to back.
    [0.001, /is 0\.001, below the least interval of 60 seconds \(0 turns re-runs off, else at least 60 seconds\)/],
    [1, /is 1, below the least interval of 60 seconds/],
    ['59.9', /is "59\.9", below the least interval/],
    ['Infinity', /is "Infinity"/],
    [Number.NaN, /is NaN/],
    [true, /is a boolean/],
    [[60], /is a list/],
    [{ s: 60 }, /is a object/],
    ['x'.repeat(5000), /is "x{40}", not/],
  ];
  for (const [value, message] of bad) {
    const option = reconvergeOption({ reconverge_interval: value });
    t.ok(option.given && 'problem' in option, `${String(value).slice(0, 20)} is refused`);
    if (option.given && 'problem' in option) {
      t.match(option.problem, message);
      t.match(option.problem, /correct the deployment's options/);
      t.ok(option.problem.length < 300, 'a long value is not repeated whole');
    }
  }
});

t.test(
  'property: any value is either 0 or seconds >= 60 written as a plain decimal number, or a problem, never a throw',
  async (t) => {
    let seed = 31;
    const random = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    const pieces = ['', ' ', '-', '1', '0', '.', 'e', '9', 'x', 'NaN', '\n', '0x1', '+'];
    for (let i = 0; i < 500; i++) {
      const text = Array.from(
        { length: Math.floor(random() * 6) },
        () => pieces[Math.floor(random() * pieces.length)],
      ).join('');
      const value = random() < 0.3 ? (random() - 0.5) * 1e6 : text;
      const numeric = typeof value === 'number' ? value : /^\s*\d+(\.\d+)?\s*$/.test(value) ? Number(value) : NaN;
      const option = reconvergeOption({ reconverge_interval: value });
      const accepted = numeric === 0 || numeric >= 60;
      if (!option.given) t.fail(`given: ${JSON.stringify(value)}`);
      else if ('seconds' in option) t.ok(accepted && option.seconds === numeric, `${JSON.stringify(value)} accepted`);
      else {
        t.notOk(accepted, `${JSON.stringify(value)} refused`);
        t.match(option.problem, /^options\.reconverge_interval is /);
      }
    }
  },
);

t.test("the interval used: the deployment's own, else its group's default; 0 turns it off", async (t) => {
  const { config } = await loadConfig({
    root: t.testdir(),
    configFiles: [],
    cli: { deploy: { reconverge_interval: ['puppet:600', 'script:30'] } },
  });
  const of = (group: string, options: Record<string, unknown>) => {
    const parsed = parseDeployment(deployment({ group, options }));
    if (!parsed.ok) throw new Error('fixture deployment did not parse');
    return reconvergeIntervalOf(parsed.deployment, config);
  };
  t.equal(of('puppet', {}), 600, "the group's default");
  t.equal(of('puppet', { reconverge_interval: 90 }), 90, 'its own wins');
  t.equal(of('puppet', { reconverge_interval: '0' }), undefined, 'its own 0: off whatever the group says');
  t.equal(of('ansible', {}), undefined, 'no default for the group: off');
  t.equal(of('puppet', { reconverge_interval: 'often' }), undefined, 'a bad option re-runs nothing');
  const parsed = parseDeployment(deployment({ group: 'script', options: { reconverge_interval: 'often' } }));
  t.ok(parsed.ok, 'the deployment itself still parses: its run fails naming the option');
  if (parsed.ok) t.match(parsed.deployment.reconverge, { given: true, problem: /reconverge_interval/ });
});
