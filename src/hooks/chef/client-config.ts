import type { Kitchen } from './kitchen.js';

// client.rb for chef-client in local mode (chef-zero): upstream's lines for a kitchen, or policy mode for a Policyfile
// export. One cookbook path is written as upstream wrote it (a string); several as a list, which chef-client takes.

/** A Ruby single-quoted string literal. */
export const rubyString = (text: string) => `'${text.replace(/[\\']/g, (c) => `\\${c}`)}'`;

/** The lines of client.rb; `environment` is the value of the input of that name, when there is one. */
export function clientConfig(kitchen: Kitchen, nodeDir: string, environment: string | undefined): string[] {
  const lines = ['log_level :debug', 'log_location STDOUT', 'local_mode true', 'chef_zero.enabled true'];
  if (kitchen.policy) {
    // The export is a repository of its own: cookbook artifacts, the policy, and the one policy group "local".
    lines.push(
      `chef_repo_path ${rubyString(kitchen.policy.repo)}`,
      'use_policyfile true',
      'policy_document_native_api true',
      `policy_name ${rubyString(kitchen.policy.name)}`,
      "policy_group 'local'",
    );
  } else {
    const [only, ...more] = kitchen.cookbookPaths;
    const cookbookPath =
      only !== undefined && more.length === 0
        ? rubyString(only)
        : `[${kitchen.cookbookPaths.map(rubyString).join(', ')}]`;
    lines.push(
      `cookbook_path ${cookbookPath}`,
      `role_path ${rubyString(kitchen.rolePath)}`,
      `environment_path ${rubyString(kitchen.environmentPath)}`,
    );
    if (environment !== undefined) lines.push(`environment ${rubyString(environment)}`);
  }
  lines.push(`node_path ${rubyString(nodeDir)}`);
  return lines;
}
