import t from 'tap';
import { extractMetadata, parseXml } from '../../src/collectors/cfn-response.js';
import { SourceUnavailableError } from '../../src/errors.js';

t.test('XML reader: entities, CDATA, comments, attributes, prefixes; refuses DOCTYPE and junk', async (t) => {
  const doc = parseXml(
    '\ufeff<?xml version="1.0"?><!-- c --><r a="1" b=\'2\'><x:M>&lt;&amp;&#65;&#x42;&quot;&apos;&gt;<![CDATA[<raw>]]></x:M><e/></r>\n',
  );
  t.equal(doc.name, 'r');
  t.equal(doc.children[0]?.text, `<&AB"'><raw>`);
  t.equal(doc.children[1]?.name, 'e');
  const md = extractMetadata(
    '<R xmlns="urn:x"><DescribeStackResourceResult><StackResourceDetail><Metadata>{"a":1}</Metadata></StackResourceDetail></DescribeStackResourceResult></R>',
    { spec: 's.Metadata', field: 'Metadata', keys: [] },
    'u',
  );
  t.same(md, { a: 1 });
  for (const bad of [
    '<!DOCTYPE r [<!ENTITY x "y">]><r>&x;</r>',
    '<r>&bogus;</r>',
    '<r>a & b</r>',
    '<r></r>trailing',
    '<r a=1></r>',
    '',
    '<r><!-- open',
    '<r><![CDATA[x</r>',
    '<r',
    '<r a="<"></r>',
    '<r>&#0;</r>',
  ]) {
    t.throws(() => parseXml(bad), JSON.stringify(bad));
  }
  let deep = '';
  for (let i = 0; i < 100; i++) deep += '<a>';
  t.throws(() => parseXml(deep), /too deeply/);
});

t.test('any damage to an answer is malformed data, never another kind of error (seeded mutations)', async (t) => {
  const valid =
    '<?xml version="1.0"?><DescribeStackResourceResponse xmlns="urn:x"><DescribeStackResourceResult>' +
    '<StackResourceDetail><Metadata>{"a": {"b": [1, "&lt;x&gt;"]}}</Metadata></StackResourceDetail>' +
    '</DescribeStackResourceResult></DescribeStackResourceResponse>';
  const alphabet = '<>/&;!?[]-="\' \n#xaAMD\u0000\ufeff';
  let seed = 28;
  const random = (n: number): number => {
    seed = (seed * 1103515245 + 12345) % 2 ** 31;
    return seed % n;
  };
  let refused = 0;
  for (let round = 0; round < 2000; round++) {
    const chars = [...valid];
    for (let edits = 1 + random(3); edits > 0; edits--) {
      const at = random(chars.length);
      const op = random(3);
      if (op === 0) chars.splice(at, 1);
      else if (op === 1) chars.splice(at, 0, alphabet[random(alphabet.length)] as string);
      else chars[at] = alphabet[random(alphabet.length)] as string;
    }
    try {
      extractMetadata(chars.join(''), { spec: 's.Metadata', field: 'Metadata', keys: [] }, 'u');
    } catch (err) {
      refused++;
      if (!(err instanceof SourceUnavailableError) || err.code !== 'ERR_SOURCE_INVALID_DATA') t.fail(String(err));
    }
  }
  t.ok(refused > 100, `most damaged answers are refused (${refused} of 2000)`);
});

t.test('a large answer is read whole, and a deep one refused without recursion', async (t) => {
  const big = JSON.stringify({ data: 'x'.repeat(4 * 1024 * 1024) });
  const xml = `<R><DescribeStackResourceResult><StackResourceDetail><Metadata>${big}</Metadata></StackResourceDetail></DescribeStackResourceResult></R>`;
  t.equal(
    (extractMetadata(xml, { spec: 's.Metadata', field: 'Metadata', keys: [] }, 'u').data as string).length,
    4 * 1024 * 1024,
  );
  t.throws(() => parseXml('<a>'.repeat(100_000)), /too deeply/);
});
