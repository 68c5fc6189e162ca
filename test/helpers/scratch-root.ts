// A scratch root for tests that make real system changes (packages, users, files anywhere): the shell lines below
// mount, at "$S/m", an overlay whose lower layer is this machine's / and whose upper layer is a fresh tmpfs at "$S",
// with /proc and /dev bound and an empty /tmp. Run them inside `unshare --mount --fork` with S set: the mounts, and
// every change made in the root, vanish with the namespace.

export const SCRATCH_ROOT_MOUNTS = `mount --make-rprivate /
mount -t tmpfs scratch "$S"
mkdir "$S/u" "$S/w" "$S/m"
mount -t overlay scratch -o "lowerdir=/,upperdir=$S/u,workdir=$S/w" "$S/m"
mount --rbind /proc "$S/m/proc"
mount --rbind /dev "$S/m/dev"
mount -t tmpfs scratch "$S/m/tmp"`;

/** A shell function `run` that runs its arguments in the scratch root with a clean environment. */
export const SCRATCH_ROOT_RUN =
  'run() { chroot "$S/m" /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 "$@"; }';
