import { isJsonObject } from '../util/json-merge.js';
import { withGroupAndConfig, type Deployment } from './deployment.js';

// From a deployment's group to the hook's file name, as 55-heat-config finds the hook: the group, with every character
// that is not a letter, digit, "-" or "_" dropped, names the file in the hooks directory.

/**
 * Keep what Python's str.isalnum() accepts (Unicode letters and digits, including other numerals) plus "-" and "_",
 * code point by code point, exactly as upstream: "scr ipt!" -> "script", "Heat::Ungrouped" -> "HeatUngrouped".
 * Combining marks are dropped, as isalnum() rejects them.
 */
export function hookNameForGroup(group: string): string {
  return group.replace(/[^\p{L}\p{N}_-]/gu, '');
}

export const COMPONENT_GROUP = 'component';

export type ComponentSelection = { ok: true; deployment: Deployment } | { ok: false; reason: string };

/**
 * A SoftwareComponent deployment (group "component") carries {configs: [{actions, tool, config}, ...]}: the first
 * entry whose actions include the deployment's action decides the hook (its tool) and the config handed to it.
 * Other groups pass through unchanged.
 */
export function selectComponent(dep: Deployment): ComponentSelection {
  if (dep.group !== COMPONENT_GROUP) return { ok: true, deployment: dep };
  const config = dep.document.config;
  const configs = isJsonObject(config) ? config.configs : undefined;
  if (!Array.isArray(configs)) return { ok: false, reason: 'component deployment has no "configs" list' };
  for (const entry of configs) {
    if (!isJsonObject(entry) || !Array.isArray(entry.actions) || !entry.actions.includes(dep.action)) continue;
    if (typeof entry.tool !== 'string' || entry.tool === '')
      return { ok: false, reason: `the component config for ${dep.action} names no tool` };
    return { ok: true, deployment: withGroupAndConfig(dep, entry.tool, entry.config) };
  }
  return { ok: false, reason: `no component config is defined for action ${dep.action}` };
}
