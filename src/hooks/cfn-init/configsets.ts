import { fail, isObject, objectAt, text, type Json } from './metadata-values.js';

// Which configs of AWS::CloudFormation::Init run, in order, as heat-cfntools' ConfigsetsHandler decides: those of the
// selected configSets (default "default"), or the one named "config" when there are no configSets. A set is one name
// or a list of names and {"ConfigSet": name} references (heat-cfntools 1.4.2 crashed on those under Python 3).

export function selectConfigs(init: Json, selected?: string): string[] {
  const sets = init.configSets;
  if (sets === undefined || sets === null || (isObject(sets) && Object.keys(sets).length === 0)) {
    if (selected) fail('configSets', `"${selected}" was asked for but the metadata has no configSets`);
    return ['config'];
  }
  const table = objectAt(sets, 'configSets');
  const wanted = selected ? selected.split(',').map((s) => s.trim()) : ['default'];
  if (!selected && !Object.hasOwn(table, 'default')) fail('configSets', 'there is no "default" configSet');
  const names: string[] = [];
  const expand = (list: unknown, trail: readonly string[]): void => {
    const where = `configSets.${trail.at(-1) ?? ''}`;
    for (const item of Array.isArray(list) ? list : [list]) {
      if (!isObject(item)) {
        names.push(text(item, where));
        continue;
      }
      const keys = Object.keys(item);
      if (keys.length !== 1 || keys[0] !== 'ConfigSet')
        fail(where, 'an entry that is an object must be {"ConfigSet": name}');
      const ref = text(item.ConfigSet, `${where}.ConfigSet`);
      if (!Object.hasOwn(table, ref)) fail('configSets', `undefined ConfigSet "${ref}" referenced`);
      if (trail.includes(ref)) fail('configSets', `ConfigSet "${ref}" includes itself`);
      expand(table[ref], [...trail, ref]);
    }
  };
  for (const name of wanted) {
    if (!Object.hasOwn(table, name))
      fail('configSets', `requested configSet "${name}" is not in the configSets section`);
    expand(table[name], [name]);
  }
  if (names.length === 0) fail('configSets', `requested configSet "${wanted.join(',')}" is empty`);
  return names;
}
