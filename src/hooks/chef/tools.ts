import type { ToolDeclaration } from '../declaration.js';

// The programs the chef hook drives besides chef-client (groups/chef.ts declares that one), each needed only by some
// deployments: git for git sources, ssh and ssh-keygen for private ones, berks for a Berksfile, chef for a Policyfile.

export const GIT: ToolDeclaration = {
  name: 'git',
  defaults: ['git'],
  install: "Install the git package, which the chef hook needs to fetch the kitchen's repositories.",
};

export const SSH: ToolDeclaration = {
  name: 'ssh',
  defaults: ['ssh'],
  install: 'Install the openssh-client package, which the chef hook needs for a repository reached over SSH.',
};

export const SSH_KEYGEN: ToolDeclaration = {
  name: 'ssh-keygen',
  defaults: ['ssh-keygen'],
  install: 'Install the openssh-client package, which the chef hook needs to check an SSH key input.',
};

export const BERKS: ToolDeclaration = {
  name: 'berks',
  variable: 'HEAT_CHEF_BERKS_CMD',
  defaults: ['berks'],
  install: 'Install Berkshelf (the berkshelf gem, or Chef Workstation); the distributions do not package it.',
};

export const CHEF_CLI: ToolDeclaration = {
  name: 'chef',
  variable: 'HEAT_CHEF_CLI_CMD',
  defaults: ['chef'],
  install: 'Install Chef Workstation or chef-cli (the chef command); the distributions do not package it.',
};

/** The declaration with a sentence saying why this deployment needs the program. */
export function neededBecause(tool: ToolDeclaration, reason: string): ToolDeclaration {
  return { ...tool, install: `${tool.install} ${reason}` };
}
