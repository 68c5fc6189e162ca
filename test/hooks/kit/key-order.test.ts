import t from 'tap';
import { pythonJson } from '../../../src/hooks/kit/data-files.js';
import { containerDefs } from '../../../src/hooks/kit/docker-containers.js';
import { parsePythonJson } from '../../../src/util/python-json-parse.js';

// A deployment's mappings keep Python's key order in what the hooks make of them, integer-like keys included
// (JavaScript lists those first): the data files written unsorted (kubelet's pod manifest), and docker-cmd's
// container order.

t.test("data files list unsorted keys in the deployment's order; sorted ones sorted", async (t) => {
  const value = parsePythonJson('{"b": 1, "10": {"y": 2, "2": 3}, "a": 4}');
  t.equal(
    pythonJson(value, { indent: 2, sortKeys: false }),
    '{\n  "b": 1,\n  "10": {\n    "y": 2,\n    "2": 3\n  },\n  "a": 4\n}',
  );
  t.equal(pythonJson(value, { indent: 0, sortKeys: true }), '{\n"10": {\n"2": 3,\n"y": 2\n},\n"a": 4,\n"b": 1\n}');
});

t.test('docker-cmd: containers of one start_order start in the order the mapping lists them', async (t) => {
  const config = parsePythonJson(
    '{"web": {"image": "i"}, "22": {"image": "i"}, "db": {"image": "i", "start_order": 0}}',
  );
  t.same(
    containerDefs(config).map((d) => d.name),
    ['web', '22', 'db'],
  );
});
