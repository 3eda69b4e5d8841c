"""The ``DiskCache`` calls that bypass the cache: writes, listings and metadata go to the inner filesystem."""
from __future__ import annotations

__all__ = ["PassThrough"]


class PassThrough:
    """Forwards every call but reads to ``self.inner`` (mixed into ``DiskCache`` before ``AbstractFileSystem``)."""

    def ls(self, path, detail=True, **kwargs):
        return self.inner.ls(path, detail=detail, **kwargs)

    def info(self, path, **kwargs):
        return self.inner.info(path, **kwargs)

    def find(self, path, maxdepth=None, withdirs=False, detail=False, **kwargs):
        return self.inner.find(path, maxdepth=maxdepth, withdirs=withdirs, detail=detail, **kwargs)

    def glob(self, path, maxdepth=None, **kwargs):
        return self.inner.glob(path, maxdepth=maxdepth, **kwargs)

    def exists(self, path, **kwargs):
        return self.inner.exists(path, **kwargs)

    def isdir(self, path):
        return self.inner.isdir(path)

    def isfile(self, path):
        return self.inner.isfile(path)

    def makedirs(self, path, exist_ok=False):
        return self.inner.makedirs(path, exist_ok=exist_ok)

    def mkdir(self, path, create_parents=True, **kwargs):
        return self.inner.mkdir(path, create_parents=create_parents, **kwargs)

    def rmdir(self, path):
        return self.inner.rmdir(path)

    def rm_file(self, path):
        return self.inner.rm_file(path)

    def rm(self, path, recursive=False, maxdepth=None):
        return self.inner.rm(path, recursive=recursive, maxdepth=maxdepth)

    def cp_file(self, path1, path2, **kwargs):
        return self.inner.cp_file(path1, path2, **kwargs)

    def copy(self, path1, path2, recursive=False, maxdepth=None, on_error=None, **kwargs):
        return self.inner.copy(path1, path2, recursive=recursive, maxdepth=maxdepth, on_error=on_error, **kwargs)

    def mv(self, path1, path2, recursive=False, maxdepth=None, **kwargs):
        return self.inner.mv(path1, path2, recursive=recursive, maxdepth=maxdepth, **kwargs)

    def put_file(self, lpath, rpath, callback=None, mode="overwrite", **kwargs):
        kwargs = {**kwargs, **({"callback": callback} if callback is not None else {})}
        return self.inner.put_file(lpath, rpath, mode=mode, **kwargs)

    def put(self, lpath, rpath, recursive=False, callback=None, maxdepth=None, **kwargs):
        kwargs = {**kwargs, **({"callback": callback} if callback is not None else {})}
        return self.inner.put(lpath, rpath, recursive=recursive, maxdepth=maxdepth, **kwargs)

    def pipe_file(self, path, value, mode="overwrite", **kwargs):
        return self.inner.pipe_file(path, value, mode=mode, **kwargs)

    def touch(self, path, truncate=True, **kwargs):
        return self.inner.touch(path, truncate=truncate, **kwargs)

    def created(self, path):
        return self.inner.created(path)

    def modified(self, path):
        return self.inner.modified(path)

    def checksum(self, path):
        return self.inner.checksum(path)

    def ukey(self, path):
        return self.inner.ukey(path)

    def invalidate_cache(self, path=None):
        return self.inner.invalidate_cache(path)
