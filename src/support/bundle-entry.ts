// One file of a support bundle: its path inside the tarball, and its text, already free of secrets.

export interface BundleEntry {
  readonly name: string;
  readonly text: string;
}
