#!/usr/bin/env python3
"""Stages an official Node.js binary for the image (run on the build host by extra-data.d/21-os-config-agent-node).

Either from a Node.js archive the builder gave (--archive), or, by default, the newest release of one LTS line from the
npm registry's node-linux-<arch> package: the tarball is checked against the registry's sha512 integrity and kept in
DIB's image cache, so later builds download it only when a newer release of the line appears (and, with DIB_OFFLINE,
make no request at all). Only bin/node and LICENSE are staged: the image needs nothing else of the archive.

Python because DIB itself is Python: every build host has it, and its urllib honours http_proxy, https_proxy and
no_proxy as curl does. Every failure is one line on stderr that says what to set or install, and exit status 1;
nothing is left half-written in the cache or the stage.
"""

import argparse
import base64
import hashlib
import http.client
import json
import lzma
import os
import re
import shutil
import sys
import tarfile
import tempfile
import urllib.error
import urllib.parse
import urllib.request
import zlib

PREFIX = 'os-config-agent element'
# DIB's ARCH values (Debian's and the RPM distributions' spellings) to Node.js's.
NODE_ARCH = {
    'amd64': 'x64', 'x86_64': 'x64',
    'arm64': 'arm64', 'aarch64': 'arm64',
    'ppc64el': 'ppc64le', 'ppc64le': 'ppc64le',
    's390x': 's390x',
}
# A stalled registry fails the build after this long without data, instead of hanging it.
TIMEOUT_SECONDS = 60
# Far above any packument or Node.js tarball (about 400 KiB and 55 MiB): a bound for a misbehaving server.
MAX_PACKUMENT_BYTES = 64 << 20
MAX_TARBALL_BYTES = 512 << 20
# The abbreviated metadata npm itself asks for: versions and dist only.
USER_AGENT = 'os-config-agent-dib-element'
ACCEPT = 'application/vnd.npm.install-v1+json; q=1.0, application/json; q=0.8'
WAY_OUT = ('set DIB_OS_CONFIG_AGENT_NODE_TARBALL to a Node.js release tarball for the image\'s architecture, '
           'DIB_OS_CONFIG_AGENT_NODE_REGISTRY to a reachable npm registry mirror, or DIB_OS_CONFIG_AGENT_NODE_FROM='
           'distribution when the image\'s own nodejs is 20 or later')


class StageError(Exception):
    pass


def public_url(url):
    """The URL without user:password, for messages."""
    parts = urllib.parse.urlsplit(url)
    if parts.username is None and parts.password is None:
        return url
    host = parts.hostname or ''
    if parts.port:
        host = '%s:%d' % (host, parts.port)
    return urllib.parse.urlunsplit((parts.scheme, host, parts.path, parts.query, parts.fragment))


def say(message):
    print('%s: %s' % (PREFIX, message), flush=True)


def open_url(url, headers):
    request = urllib.request.Request(url, headers=headers)
    try:
        return urllib.request.urlopen(request, timeout=TIMEOUT_SECONDS)
    except urllib.error.HTTPError as e:
        if e.code == 304:
            return e
        raise StageError('%s answered HTTP %d: %s' % (public_url(url), e.code, WAY_OUT))
    except (urllib.error.URLError, OSError) as e:
        reason = getattr(e, 'reason', e)
        raise StageError('cannot reach the npm registry (%s: %s) to fetch Node.js: %s, and build again'
                         % (public_url(url), reason, WAY_OUT))


def read_bounded(response, limit, url):
    body = response.read(limit + 1)
    if len(body) > limit:
        raise StageError('%s sent more than %d bytes: not an npm registry? %s' % (public_url(url), limit, WAY_OUT))
    return body


def load_packument(registry, package, cache_dir, offline):
    """The package's registry metadata: fetched (revalidated with the cached copy's ETag or date), or cached."""
    cached_path = os.path.join(cache_dir, package + '.json')
    cached = None
    try:
        with open(cached_path, encoding='utf-8') as f:
            cached = json.load(f)
        if not isinstance(cached, dict) or not isinstance(cached.get('packument'), dict):
            cached = None
    except (OSError, ValueError):
        cached = None
    if offline:
        if cached is None:
            raise StageError('DIB_OFFLINE is set but no Node.js metadata is cached in %s: build once with network '
                             'access, or set DIB_OS_CONFIG_AGENT_NODE_TARBALL' % cache_dir)
        return cached['packument']
    url = registry.rstrip('/') + '/' + package
    headers = {'Accept': ACCEPT, 'User-Agent': USER_AGENT}
    if cached is not None and cached.get('etag'):
        headers['If-None-Match'] = cached['etag']
    if cached is not None and cached.get('last_modified'):
        headers['If-Modified-Since'] = cached['last_modified']
    try:
        with open_url(url, headers) as response:
            if response.getcode() == 304 and cached is not None:
                return cached['packument']
            body = read_bounded(response, MAX_PACKUMENT_BYTES, url)
            etag = response.headers.get('ETag')
            last_modified = response.headers.get('Last-Modified')
    except (OSError, http.client.HTTPException) as e:
        raise StageError('reading %s failed (%s): build again, or %s' % (public_url(url), e, WAY_OUT))
    try:
        packument = json.loads(body)
    except ValueError:
        packument = None
    if not isinstance(packument, dict) or not isinstance(packument.get('versions'), dict):
        raise StageError('%s did not answer with npm package metadata: %s' % (public_url(url), WAY_OUT))
    write_atomically(cached_path, json.dumps({'etag': etag, 'last_modified': last_modified,
                                              'packument': packument}).encode('utf-8'))
    return packument


def newest_of_line(packument, package, line):
    """The newest release (no pre-release, not deprecated) of the LTS line, with its dist record."""
    best = None
    for version, record in packument['versions'].items():
        match = re.fullmatch(r'(\d+)\.(\d+)\.(\d+)', version)
        if not match or match.group(1) != line or not isinstance(record, dict) or record.get('deprecated'):
            continue
        key = tuple(int(n) for n in match.groups())
        if best is None or key > best[0]:
            best = (key, version, record.get('dist'))
    if best is None:
        raise StageError('the npm registry has no release of Node.js %s in %s: %s' % (line, package, WAY_OUT))
    _, version, dist = best
    if not isinstance(dist, dict) or not isinstance(dist.get('tarball'), str):
        raise StageError('the registry metadata of %s@%s names no tarball: %s' % (package, version, WAY_OUT))
    return version, dist


def sha512_of(integrity, what):
    """The sha512 digest an npm integrity string (SRI: "sha512-<base64>", maybe several) promises."""
    for token in (integrity or '').split():
        algorithm, _, value = token.partition('-')
        if algorithm == 'sha512':
            try:
                return base64.b64decode(value, validate=True)
            except ValueError:
                break
    raise StageError('the registry gives no sha512 integrity for %s, so it cannot be verified: %s' % (what, WAY_OUT))


def file_sha512(path):
    digest = hashlib.sha512()
    with open(path, 'rb') as f:
        for block in iter(lambda: f.read(1 << 20), b''):
            digest.update(block)
    return digest.digest()


def write_atomically(path, data):
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix='.' + os.path.basename(path) + '.')
    try:
        with os.fdopen(fd, 'wb') as f:
            f.write(data)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def download_verified(url, expected, path, what):
    """Downloads into a hidden temporary file beside path and renames it there only when the sha512 matches."""
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix='.' + os.path.basename(path) + '.')
    try:
        digest = hashlib.sha512()
        size = 0
        try:
            with os.fdopen(fd, 'wb') as f, open_url(url, {'User-Agent': USER_AGENT}) as response:
                for block in iter(lambda: response.read(1 << 20), b''):
                    size += len(block)
                    if size > MAX_TARBALL_BYTES:
                        raise StageError('%s sent more than %d bytes for %s: %s'
                                         % (public_url(url), MAX_TARBALL_BYTES, what, WAY_OUT))
                    digest.update(block)
                    f.write(block)
        except (OSError, http.client.HTTPException) as e:
            raise StageError('the download of %s from %s failed (%s): build again, or %s'
                             % (what, public_url(url), e, WAY_OUT))
        if digest.digest() != expected:
            raise StageError('%s from %s does not match the registry\'s sha512 integrity (a broken mirror or proxy?); '
                             'nothing was staged or cached: build again, or %s' % (what, public_url(url), WAY_OUT))
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def cached_tarball(args):
    """The newest release of the line as a verified file in the cache, downloading it when needed."""
    arch = NODE_ARCH.get(args.arch)
    if arch is None:
        raise StageError('Node.js has no official binary for ARCH=%s (supported: %s): set '
                         'DIB_OS_CONFIG_AGENT_NODE_TARBALL to a Node.js >= 20 tarball built for it, or '
                         'DIB_OS_CONFIG_AGENT_NODE_FROM=distribution when the image\'s own nodejs is 20 or later'
                         % (args.arch or '(unset)', ', '.join(sorted(NODE_ARCH))))
    package = 'node-linux-' + arch
    try:
        os.makedirs(args.cache, exist_ok=True)
    except OSError as e:
        raise StageError('cannot create the Node.js cache %s (%s): set DIB_IMAGE_CACHE to a writable directory'
                         % (args.cache, e.strerror))
    packument = load_packument(args.registry, package, args.cache, args.offline)
    version, dist = newest_of_line(packument, package, args.line)
    what = '%s@%s' % (package, version)
    expected = sha512_of(dist.get('integrity'), what)
    path = os.path.join(args.cache, '%s-%s.tgz' % (package, version))
    if os.path.isfile(path) and file_sha512(path) == expected:
        where = 'cached in %s' % args.cache
    elif args.offline:
        raise StageError('DIB_OFFLINE is set but %s is not in the cache %s (or does not match its checksum): '
                         'build once with network access, or set DIB_OS_CONFIG_AGENT_NODE_TARBALL' % (what, args.cache))
    else:
        download_verified(dist['tarball'], expected, path, what)
        where = 'downloaded from %s into %s' % (public_url(args.registry), args.cache)
    say('Node.js v%s: the newest release of LTS line %s (%s, %s, sha512 verified)' % (version, args.line, what, where))
    return path


def wanted(info):
    """Where an archive member goes in the stage, if anywhere: <top>/bin/node and <top>/LICENSE, regular files
    (release tarballs and npm packages have one top directory)."""
    parts = info.name.lstrip('./').strip('/').split('/')
    if not info.isfile() or len(parts) < 2:
        return None
    if parts[1:] == ['bin', 'node']:
        return 'bin/node', 0o755
    if parts[1:] == ['LICENSE']:
        return 'LICENSE', 0o644
    return None


def stage_archive(archive, dest):
    """Puts bin/node and LICENSE into dest, replacing it whole. One streaming pass: reading the member list first
    and seeking back made a compressed archive decompress three times."""
    parent = os.path.dirname(os.path.abspath(dest))
    work = tempfile.mkdtemp(dir=parent, prefix='.os-config-agent-node.')
    try:
        os.chmod(work, 0o755)
        os.makedirs(os.path.join(work, 'bin'))
        found = set()
        try:
            with tarfile.open(archive, 'r|*') as tar:
                for info in tar:
                    target = wanted(info)
                    if target is None or target[0] in found:
                        continue
                    with tar.extractfile(info) as src, open(os.path.join(work, target[0]), 'wb') as out:
                        shutil.copyfileobj(src, out, 1 << 20)
                    os.chmod(os.path.join(work, target[0]), target[1])
                    found.add(target[0])
        except (tarfile.TarError, EOFError, OSError, zlib.error, lzma.LZMAError) as e:
            raise StageError('could not unpack the Node.js archive %s (%s): give a complete Node.js release tarball'
                             % (archive, e))
        if 'bin/node' not in found:
            raise StageError('%s has no bin/node: expected a Node.js release tarball '
                             '(node-vNN.N.N-linux-<arch>.tar.xz) or the npm package node-linux-<arch>' % archive)
        shutil.rmtree(dest, ignore_errors=True)
        os.rename(work, dest)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--dest', required=True, help='directory to stage bin/node and LICENSE in (replaced)')
    parser.add_argument('--archive', help='a Node.js archive on the build host (no registry access)')
    parser.add_argument('--arch', default='', help="DIB's ARCH of the image")
    parser.add_argument('--line', help='the LTS line (major version)')
    parser.add_argument('--registry', default='https://registry.npmjs.org')
    parser.add_argument('--cache', help='directory keeping the registry metadata and tarballs between builds')
    parser.add_argument('--offline', action='store_true', help='use the cache only (DIB_OFFLINE)')
    args = parser.parse_args()
    try:
        if args.archive:
            archive = args.archive
        else:
            if not args.line or not args.cache:
                parser.error('--line and --cache are needed without --archive')
            archive = cached_tarball(args)
        stage_archive(archive, args.dest)
    except StageError as e:
        print('%s: %s' % (PREFIX, e), file=sys.stderr)
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main())
