import t from 'tap';
import { lookupId } from '../../src/apply/account-lookup.js';

t.test('names and ids resolve through the name service', async (t) => {
  t.equal(await lookupId('passwd', 'root'), 0);
  t.equal(await lookupId('passwd', 0), 0);
  t.equal(await lookupId('group', 'root'), 0);
  t.equal(await lookupId('passwd', 'nobody'), 65534);
  t.equal(await lookupId('group', 65534), 65534);
  t.equal(await lookupId('passwd', 'root'), 0, 'cached answer');
});

t.test('unknown names and ids are undefined; a numeric string is a name, not an id', async (t) => {
  t.equal(await lookupId('passwd', 'no-such-user-oac'), undefined);
  t.equal(await lookupId('group', 'no-such-group-oac'), undefined);
  t.equal(await lookupId('passwd', 3999999), undefined);
  t.equal(await lookupId('passwd', '0'), undefined, 'getpwnam("0") finds no user named "0"');
});
