"""The object store: immutable, content-addressed blobs over fsspec (a local folder by default)."""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from pathlib import Path

import fsspec
from fsspec.implementations.local import LocalFileSystem

from weft_core.refs import address_digest, content_address
from weft_megamcp.exceptions import MegaMCPRuntimeError, NotFoundError

_CHUNK = 1 << 20


def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while chunk := fh.read(_CHUNK):
            h.update(chunk)
    return h.hexdigest()


class ObjectStore:
    """Blobs under `<root>/blobs/<aa>/<sha256>`; a blob is written once and never changed.

    Keys are content hashes, so a blob can be shared by every version and snapshot that holds
    the same bytes. `local_path` gives a readable local file (the blob itself for a local store,
    a verified cached download otherwise) so hosts can clone snapshots with a plain file copy.
    """

    def __init__(self, url: str, cache_dir: Path) -> None:
        self.url = url.rstrip("/")
        self.fs, self.root = fsspec.core.url_to_fs(self.url)
        self.is_local = isinstance(self.fs, LocalFileSystem)
        self.cache_dir = cache_dir
        if self.is_local:
            Path(self.root).mkdir(parents=True, exist_ok=True)

    def _key(self, sha: str) -> str:
        return f"{self.root}/blobs/{sha[:2]}/{sha}"

    def uri(self, sha: str) -> str:
        """The reference an artifact stores for blob `sha`: its content address, which any host
        resolves in its own store wherever the store (or a corpus holding it) has moved."""
        return content_address(sha)

    def blob_url(self, sha: str) -> str:
        """Where blob `sha` lies in this store (a local path, or an `s3://...` URL)."""
        key = self._key(sha)
        if self.is_local:
            return key
        proto = self.fs.protocol[0] if isinstance(self.fs.protocol, tuple) else self.fs.protocol
        return f"{proto}://{key}"

    def sha_of_uri(self, uri: str) -> str:
        """The digest a snapshot reference names: a content address `sha256:<hex>`, an
        object-store URL or a blob path (written by older versions) ending in the digest."""
        digest = address_digest(uri)
        if digest is not None:
            return digest
        name = uri.rstrip("/").rsplit("/", 1)[-1]
        if len(name) != 64 or any(c not in "0123456789abcdef" for c in name):
            raise NotFoundError(f"object URI {uri!r} is not a MegaMCP blob URI")
        return name

    def exists(self, sha: str) -> bool:
        return bool(self.fs.exists(self._key(sha)))

    def put_file(self, path: Path, sha: str | None = None) -> str:
        """Store a file; returns its sha256. Idempotent: an existing blob is left as is."""
        sha = sha or file_sha256(path)
        key = self._key(sha)
        if self.fs.exists(key):
            return sha
        if self.is_local:
            Path(key).parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=Path(key).parent, prefix=".put.")
            os.close(fd)
            try:
                shutil.copyfile(path, tmp)
                os.chmod(tmp, 0o444)
                os.replace(tmp, key)
            except BaseException:
                Path(tmp).unlink(missing_ok=True)
                raise
        else:
            self.fs.put_file(str(path), key)
        return sha

    def put_bytes(self, data: bytes) -> str:
        sha = hashlib.sha256(data).hexdigest()
        key = self._key(sha)
        if self.fs.exists(key):
            return sha
        if self.is_local:
            Path(key).parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=Path(key).parent, prefix=".put.")
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
            os.chmod(tmp, 0o444)
            os.replace(tmp, key)
        else:
            self.fs.pipe_file(key, data)
        return sha

    def get_bytes(self, sha: str) -> bytes:
        try:
            data: bytes = self.fs.cat_file(self._key(sha))
        except FileNotFoundError:
            raise NotFoundError(f"object {sha[:12]} is not in the object store") from None
        if hashlib.sha256(data).hexdigest() != sha:
            raise MegaMCPRuntimeError(f"object {sha[:12]} is corrupt (hash mismatch)")
        return data

    def local_path(self, sha: str) -> Path:
        """A local, read-only file holding blob `sha`."""
        if self.is_local:
            p = Path(self._key(sha))
            if not p.exists():
                raise NotFoundError(f"object {sha[:12]} is not in the object store")
            return p
        cached = self.cache_dir / sha[:2] / sha
        if cached.exists():
            return cached
        cached.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=cached.parent, prefix=".get.")
        os.close(fd)
        try:
            self.fs.get_file(self._key(sha), tmp)
            if file_sha256(Path(tmp)) != sha:
                raise MegaMCPRuntimeError(f"object {sha[:12]} is corrupt (hash mismatch)")
            os.replace(tmp, cached)
        finally:
            Path(tmp).unlink(missing_ok=True)
        return cached
