"""Reading ``.npy`` and ``.npz`` files of plain arrays (:func:`read_npy`, :func:`read_npz`).

Headers are checked before numpy allocates anything: a plain dtype whose items take at least
one byte, every dimension within numpy's index range, and a declared size within the byte and
element limits and backed by the data present (see
:mod:`retrieval_conformance.reference.readers.limits`).
"""

from __future__ import annotations

import math
import os
import zipfile
import zlib
from typing import Any, Dict, Tuple

import numpy as np
from retrieval_conformance.reference.readers.limits import (
    _PLAIN_KINDS,
    MAX_ARRAY_BYTES,
    MAX_ARRAY_ELEMENTS,
    MAX_NPZ_MEMBERS,
    FileRefusedError,
    PathLike,
    _clip,
    _open_regular,
    _size,
)

__all__ = ["read_npy", "read_npz"]

# numpy's own default bound on a .npy header (np.lib.format, max_header_size)
_MAX_NPY_HEADER = 10000
_NPY_MAGIC = b"\x93NUMPY"
# numpy indexes with intp: a larger dimension (or a product of the non-zero ones beyond it)
# makes numpy raise OverflowError or "array is too big", even when another dimension is 0
_MAX_DIMENSION = int(np.iinfo(np.intp).max)


def _npy_header(fp: Any, where: str) -> Tuple[Tuple[int, ...], bool, Any, int]:
    """``(shape, fortran_order, dtype, header_end)`` of the ``.npy`` stream at ``fp``.

    The header length is checked before numpy reads the header (numpy would read a
    claimed 4 GiB header before refusing it); the dtype must be plain (no objects, fields
    or sub-arrays); nothing of the data is read.
    """
    prefix = fp.read(len(_NPY_MAGIC) + 2)
    if len(prefix) < len(_NPY_MAGIC) + 2 or not prefix.startswith(_NPY_MAGIC):
        raise ValueError(f"{where}: not a .npy array (no NUMPY magic string)")
    version = (prefix[-2], prefix[-1])
    if version not in ((1, 0), (2, 0)):
        raise ValueError(
            f"{where}: .npy format version {version[0]}.{version[1]} is not "
            "read (only 1.0 and 2.0, what numpy writes for plain arrays)"
        )
    width = 2 if version == (1, 0) else 4
    length = fp.read(width)
    if len(length) != width:
        raise ValueError(f"{where}: truncated .npy header")
    header_len = int.from_bytes(length, "little")
    if header_len > _MAX_NPY_HEADER:
        raise ValueError(
            f"{where}: .npy header of {header_len:,} bytes, more than numpy's limit of {_MAX_NPY_HEADER:,}"
        )
    fp.seek(0)
    np.lib.format.read_magic(fp)
    read = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
    try:
        shape, fortran, dtype = read(fp)
    except Exception as exc:  # numpy parses the (bounded) header text: ValueError, TokenError...
        raise ValueError(f"{where}: malformed .npy header ({type(exc).__name__}: {str(exc)[:200]})") from None
    if dtype.hasobject or dtype.fields is not None or dtype.subdtype is not None or dtype.kind not in _PLAIN_KINDS:
        raise ValueError(
            f"{where}: dtype {dtype.str} is not read: only plain numeric, bytes "
            "and str arrays (object arrays would need pickle)"
        )
    if not all(type(d) is int and d >= 0 for d in shape):
        raise ValueError(f"{where}: malformed .npy shape")
    if math.prod(d for d in shape if d) > _MAX_DIMENSION:
        raise ValueError(
            f"{where}: .npy shape {_clip(str(shape), 80)} is beyond numpy's index range "
            f"({_MAX_DIMENSION:,} elements): forged or corrupt"
        )
    if dtype.itemsize == 0:
        raise ValueError(
            f"{where}: dtype {dtype.str} has items of 0 bytes (every item an empty string): "
            "not an array of ids or values; save the array with numpy's own dtype for it"
        )
    return shape, fortran, dtype, len(_NPY_MAGIC) + 2 + width + header_len


def _declared_bytes(shape: Tuple[int, ...], dtype: Any) -> int:
    return math.prod(shape) * dtype.itemsize


def _too_many(
    where: str, shape: Tuple[int, ...], dtype: Any, count: int, total: int, max_elements: int
) -> FileRefusedError:
    what = f"array of shape {shape} and dtype {dtype.str} ({count:,} elements)"
    if total > count:
        what += f", {total:,} with the arrays before it,"
    return FileRefusedError(
        where,
        f"{what} beyond the limit of {max_elements:,} elements",
        "pass max_elements=... to read larger arrays",
        limit="max_elements",
    )


def _too_large(
    where: str, shape: Tuple[int, ...], dtype: Any, nbytes: int, total: int, max_bytes: int
) -> FileRefusedError:
    what = f"array of shape {shape} and dtype {dtype.str} ({_size(nbytes)})"
    if total > nbytes:
        what += f", {_size(total)} with the arrays before it,"
    return FileRefusedError(
        where,
        f"{what} beyond the limit of {_size(max_bytes)}",
        "pass max_bytes=... to read larger arrays",
        limit="max_bytes",
    )


def read_npy(path: PathLike, *, max_bytes: int = MAX_ARRAY_BYTES, max_elements: int = MAX_ARRAY_ELEMENTS) -> Any:
    """A plain array from a ``.npy`` file, refusing before allocation what cannot be right.

    ``numpy.load(path, allow_pickle=False)`` allocates whatever size the header declares
    (an 8 GB array for a header written by hand into a 100-byte file) and gives a
    traceback-worthy ``ValueError`` for object arrays.  Here the declared size (shape times
    item size) must be at most ``max_bytes`` and present in the file before anything is
    allocated; only plain numeric, bytes and str dtypes are read.

    Parameters
    ----------
    path : path
        A regular file (a FIFO or device is refused, see
        :mod:`retrieval_conformance.reference.readers.limits`).
    max_bytes : int
        Largest array (default :data:`MAX_ARRAY_BYTES`, 2 GiB).
    max_elements : int
        Most elements (default :data:`MAX_ARRAY_ELEMENTS`, 2**31).

    Raises
    ------
    FileNotFoundError, IsADirectoryError, OSError
        When the file cannot be opened.
    FileRefusedError
        For a FIFO or device, or an array beyond ``max_bytes`` or ``max_elements``.
    ValueError
        For anything but a plain ``.npy`` array (object, structured or zero-size items, a
        shape beyond numpy's index range), or fewer data bytes than declared.
    """
    where = os.fsdecode(os.fspath(path))
    f = _open_regular(path)
    assert f is not None
    with f:
        shape, fortran, dtype, offset = _npy_header(f, where)
        nbytes = _declared_bytes(shape, dtype)
        if nbytes > max_bytes:
            raise _too_large(where, shape, dtype, nbytes, nbytes, max_bytes)
        count = math.prod(shape)
        if count > max_elements:
            raise _too_many(where, shape, dtype, count, count, max_elements)
        size = os.fstat(f.fileno()).st_size
        if offset + nbytes > size:
            raise ValueError(
                f"{where}: the header declares {_size(nbytes)} of data (shape "
                f"{shape}, dtype {dtype.str}) but the file holds "
                f"{_size(max(size - offset, 0))}: truncated or forged"
            )
        f.seek(0)
        try:
            return np.lib.format.read_array(f, allow_pickle=False)
        except (ValueError, OSError) as exc:
            raise ValueError(f"{where}: {str(exc)[:200]}") from None


def read_npz(
    path: PathLike,
    *,
    max_bytes: int = MAX_ARRAY_BYTES,
    max_members: int = MAX_NPZ_MEMBERS,
    max_elements: int = MAX_ARRAY_ELEMENTS,
) -> Dict[str, Any]:
    """The arrays of an ``.npz`` file, checked before any is allocated.

    Every member must be a plain ``.npy`` array (``name.npy``, returned as ``name``).  For
    each, the header is read first: the declared size (shape times item size) must fit in
    the member's uncompressed size recorded in the zip directory (reading never goes
    beyond that size, and the CRC is checked at its end), and all arrays together must fit
    in ``max_bytes`` -- a 7.8 MB file of compressed zeros declaring an 8 GB array, or a
    header claiming 71 PiB, is refused before any allocation.

    Parameters
    ----------
    path : path
        A regular file.
    max_bytes : int
        Most bytes of all arrays together (default :data:`MAX_ARRAY_BYTES`, 2 GiB).
    max_members : int
        Most arrays (default :data:`MAX_NPZ_MEMBERS`).
    max_elements : int
        Most elements of all arrays together (default :data:`MAX_ARRAY_ELEMENTS`, 2**31).

    Returns
    -------
    dict
        Name -> array, in the archive's order.

    Raises
    ------
    FileNotFoundError, IsADirectoryError, OSError
        When the file cannot be opened.
    FileRefusedError
        For a FIFO or device, or arrays beyond ``max_bytes`` or ``max_elements``.
    ValueError
        For a file that is not a zip archive of plain ``.npy`` arrays (garbage, truncated,
        encrypted, object arrays, zero-size items, shapes beyond numpy's index range,
        duplicate or non-``.npy`` members, fewer data bytes than declared); the message
        names the member.
    """
    where = os.fsdecode(os.fspath(path))
    f = _open_regular(path)
    assert f is not None
    with f:
        if f.read(len(_NPY_MAGIC)) == _NPY_MAGIC:
            raise ValueError(f"{where}: a .npy file, not an .npz archive")
        f.seek(0)
        try:
            archive = zipfile.ZipFile(f)
        except (zipfile.BadZipFile, zipfile.LargeZipFile, ValueError, EOFError, OSError, NotImplementedError) as exc:
            raise ValueError(
                f"{where}: not a readable .npz (zip) archive: {type(exc).__name__}: {str(exc)[:200]}"
            ) from None
        with archive:
            infos = archive.infolist()
            if len(infos) > max_members:
                raise FileRefusedError(
                    where,
                    f"{len(infos):,} members, more than the limit of {max_members:,}",
                    "pass max_members=... to read it",
                    limit="max_members",
                )
            plan = []
            total = 0
            elements = 0
            for info in infos:
                member = f"{where}[{_clip(info.filename, 80)}]"
                if not info.filename.endswith(".npy"):
                    raise ValueError(f"{member}: not an .npy member")
                name = info.filename[:-4]
                if any(name == seen for seen, _ in plan):
                    raise ValueError(f"{member}: a second member of that name")
                try:
                    with archive.open(info) as fp:
                        shape, _fortran, dtype, offset = _npy_header(fp, member)
                except ValueError:
                    raise
                except (zipfile.BadZipFile, zlib.error, EOFError, OSError, RuntimeError, NotImplementedError) as exc:
                    raise ValueError(f"{member}: cannot be read: {type(exc).__name__}: {str(exc)[:200]}") from None
                nbytes = _declared_bytes(shape, dtype)
                total += nbytes
                if total > max_bytes:
                    raise _too_large(member, shape, dtype, nbytes, total, max_bytes)
                count = math.prod(shape)
                elements += count
                if elements > max_elements:
                    raise _too_many(member, shape, dtype, count, elements, max_elements)
                if offset + nbytes > info.file_size:
                    raise ValueError(
                        f"{member}: the header declares {_size(nbytes)} of data (shape {shape}, "
                        f"dtype {dtype.str}) but the member holds "
                        f"{_size(max(info.file_size - offset, 0))}: truncated or forged"
                    )
                plan.append((name, info))
            out = {}
            for name, info in plan:
                member = f"{where}[{_clip(info.filename, 80)}]"
                try:
                    with archive.open(info) as fp:
                        out[name] = np.lib.format.read_array(fp, allow_pickle=False)
                except (
                    ValueError,
                    zipfile.BadZipFile,
                    zlib.error,
                    EOFError,
                    OSError,
                    RuntimeError,
                    NotImplementedError,
                ) as exc:
                    raise ValueError(f"{member}: cannot be read: {type(exc).__name__}: {str(exc)[:200]}") from None
            return out
