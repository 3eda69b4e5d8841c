"""Spark's ``hash`` (Murmur3 x86 32-bit, seed 42), ``xxhash64`` (XXH64, seed 42) and ``crc32`` for DuckDB: Python functions and the macros that read a value by its type.

``hash(a, b, ...)`` folds its arguments left to right, each hashed with the previous hash as its seed,
a NULL leaving the hash as it is, as Spark's ``Murmur3Hash`` does: an int (and a byte, short, boolean
as 1/0, date as days) as Murmur3's ``hashInt``, a bigint (and a timestamp as microseconds, a decimal
of up to 18 digits as its unscaled value) as ``hashLong``, a float or double by its IEEE bits (-0.0
as 0.0), text and binary by their bytes, four at a time and then byte by byte (Spark's
``hashUnsafeBytes``, not the reference tail), a longer decimal by its unscaled value's bytes (Java's
``BigInteger.toByteArray``). ``xxhash64`` hashes the same bytes (an int's four, a bigint's eight,
little-endian) with XXH64, the hash so far its seed. An array, map or struct stops the step on Ray.
The value's type is DuckDB's, which is Spark's for columns and literals (an INT literal is an int
on both, a Parquet int64 a bigint); a computed number whose type differs between the engines
(README: decimals) hashes differently.
"""
from __future__ import annotations

import struct
import zlib

import numpy as np
import pyarrow as pa

__all__ = ["MACROS", "register"]

_C1, _C2 = np.uint32(0xCC9E2D51), np.uint32(0x1B873593)

_INT, _LONG, _BYTES, _FLOAT, _DOUBLE, _BIG = range(6)
#: ``__df_hash(seed, x)``: one value hashed with ``seed`` as Spark hashes its type; ``x`` is read back
#: from text in the branch its type takes, so every branch binds whatever the type.
MACROS = f"""
CREATE MACRO __df_hash_kind(x) AS CASE
  WHEN typeof(x) IN ('INTEGER', 'SMALLINT', 'TINYINT', 'UTINYINT', 'USMALLINT', 'BOOLEAN', 'DATE', '"NULL"') THEN {_INT}
  WHEN typeof(x) IN ('BIGINT', 'UINTEGER', 'HUGEINT', 'TIMESTAMP', 'TIMESTAMP WITH TIME ZONE') OR regexp_full_match(typeof(x), 'DECIMAL\\(([1-9]|1[0-8]),[0-9]+\\)') THEN {_LONG}
  WHEN typeof(x) IN ('VARCHAR', 'BLOB') THEN {_BYTES} WHEN typeof(x) = 'FLOAT' THEN {_FLOAT} WHEN typeof(x) = 'DOUBLE' THEN {_DOUBLE}
  WHEN typeof(x) LIKE 'DECIMAL%' THEN {_BIG}
  ELSE error('hash of a ' || typeof(x) || ' is not supported on Ray (Spark hashes it element by element)') END;
CREATE MACRO __df_hash_number(x) AS CASE
  WHEN typeof(x) = 'BOOLEAN' THEN CASE CAST(x AS VARCHAR) WHEN 'true' THEN 1 WHEN 'false' THEN 0 END
  WHEN typeof(x) = 'DATE' THEN TRY_CAST(CAST(x AS VARCHAR) AS DATE) - DATE '1970-01-01'
  WHEN typeof(x) IN ('TIMESTAMP', 'TIMESTAMP WITH TIME ZONE') THEN epoch_us(TRY_CAST(CAST(x AS VARCHAR) AS TIMESTAMPTZ))
  WHEN typeof(x) LIKE 'DECIMAL%' THEN TRY_CAST(replace(CAST(x AS VARCHAR), '.', '') AS BIGINT)
  ELSE TRY_CAST(CAST(x AS VARCHAR) AS BIGINT) END;
CREATE MACRO __df_hash_real(x) AS CASE WHEN typeof(x) IN ('FLOAT', 'DOUBLE') THEN TRY_CAST(CAST(x AS VARCHAR) AS DOUBLE) END;
CREATE MACRO __df_hash_data(x) AS CASE
  WHEN typeof(x) = 'VARCHAR' THEN encode(CAST(x AS VARCHAR)) WHEN typeof(x) = 'BLOB' THEN TRY_CAST(CAST(x AS VARCHAR) AS BLOB)
  WHEN typeof(x) LIKE 'DECIMAL%' THEN encode(replace(CAST(x AS VARCHAR), '.', '')) END;
CREATE MACRO __df_hash(h, x) AS __df_hash_value(h, __df_hash_kind(x), __df_hash_number(x), __df_hash_real(x), __df_hash_data(x));
CREATE MACRO __df_xxhash(h, x) AS __df_xxhash_value(h, __df_hash_kind(x), __df_hash_number(x), __df_hash_real(x), __df_hash_data(x));
CREATE MACRO __df_crc32(x) AS __df_crc32_of(CASE WHEN typeof(x) = 'BLOB' THEN TRY_CAST(CAST(x AS VARCHAR) AS BLOB) ELSE encode(CAST(x AS VARCHAR)) END);
"""


def _rotl(x: np.ndarray, r: int) -> np.ndarray:
    return (x << np.uint32(r)) | (x >> np.uint32(32 - r))


def _mix_k1(k1: np.ndarray) -> np.ndarray:
    return _rotl(k1 * _C1, 15) * _C2


def _mix_h1(h1: np.ndarray, k1: np.ndarray) -> np.ndarray:
    return _rotl(h1 ^ k1, 13) * np.uint32(5) + np.uint32(0xE6546B64)


def _fmix(h1: np.ndarray, length) -> np.ndarray:
    h1 = h1 ^ np.asarray(length, np.uint32)
    h1 = (h1 ^ (h1 >> np.uint32(16))) * np.uint32(0x85EBCA6B)
    h1 = (h1 ^ (h1 >> np.uint32(13))) * np.uint32(0xC2B2AE35)
    return h1 ^ (h1 >> np.uint32(16))


def hash_ints(seed: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Murmur3's ``hashInt`` of int32 ``values`` with int32 ``seed`` (each row its own), as int32."""
    with np.errstate(over="ignore"):
        return _fmix(_mix_h1(seed.astype(np.uint32), _mix_k1(values.astype(np.int32).view(np.uint32))), 4).view(np.int32)


def hash_longs(seed: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Murmur3's ``hashLong`` of int64 ``values``: the low then the high 32 bits."""
    bits = values.astype(np.int64).view(np.uint64)
    low, high = (bits & np.uint64(0xFFFFFFFF)).astype(np.uint32), (bits >> np.uint64(32)).astype(np.uint32)
    with np.errstate(over="ignore"):
        return _fmix(_mix_h1(_mix_h1(seed.astype(np.uint32), _mix_k1(low)), _mix_k1(high)), 8).view(np.int32)


def hash_bytes(seed: int, data: bytes) -> int:
    """Spark's ``hashUnsafeBytes``: little-endian words, then each byte left (sign-extended) as a word of its own (Python ints: one value)."""
    m = 0xFFFFFFFF

    def mix(h1: int, k1: int) -> int:
        k1 = (k1 * 0xCC9E2D51) & m
        k1 = (((k1 << 15) | (k1 >> 17)) * 0x1B873593) & m
        h1 ^= k1
        return ((((h1 << 13) | (h1 >> 19)) & m) * 5 + 0xE6546B64) & m

    aligned = len(data) - len(data) % 4
    h1 = seed & m
    for (word,) in struct.iter_unpack("<I", data[:aligned]):
        h1 = mix(h1, word)
    for byte in data[aligned:]:
        h1 = mix(h1, (byte - 256 if byte > 127 else byte) & m)
    h1 ^= len(data)
    h1 = ((h1 ^ (h1 >> 16)) * 0x85EBCA6B) & m
    h1 = ((h1 ^ (h1 >> 13)) * 0xC2B2AE35) & m
    h1 ^= h1 >> 16
    return h1 - (1 << 32) if h1 > 0x7FFFFFFF else h1


def _float_bits(x: np.ndarray) -> np.ndarray:
    x = np.where(x == 0, np.float32(0), x).astype(np.float32)  # -0.0 as 0.0; NaN as Java's canonical NaN
    return np.where(np.isnan(x), np.int32(0x7FC00000), x.view(np.int32))


def _double_bits(x: np.ndarray) -> np.ndarray:
    x = np.where(x == 0, 0.0, x).astype(np.float64)
    return np.where(np.isnan(x), np.int64(0x7FF8000000000000), x.view(np.int64))


def hash_binary(seed: np.ndarray, values: pa.Array, longest: int = 256) -> np.ndarray:
    """``hash_bytes`` of each value of a binary array (NULL as empty), values of up to ``longest`` bytes all at once: their words side by side."""
    values = (values.combine_chunks() if isinstance(values, pa.ChunkedArray) else values).cast(pa.binary())
    offsets = np.frombuffer(values.buffers()[1], np.int32, count=len(values) + 1, offset=values.offset * 4)
    data = values.buffers()[2]
    buf = np.frombuffer(data, np.uint8) if data is not None else np.zeros(0, np.uint8)
    lens = np.diff(offsets)
    out = np.zeros(len(values), np.int32)
    short = lens <= longest
    for i in np.flatnonzero(~short):  # a long value alone, its words one by one
        out[i] = hash_bytes(int(seed[i]), buf[offsets[i]:offsets[i + 1]].tobytes())
    rows = np.flatnonzero(short)
    if not len(rows):
        return out
    n = lens[rows]
    width = max(4, -(-int(n.max()) // 4) * 4)
    at = offsets[rows, None] + np.arange(width)[None, :]
    padded = np.where(np.arange(width)[None, :] < n[:, None], buf[np.minimum(at, max(len(buf) - 1, 0))] if len(buf) else 0, 0).astype(np.uint8)
    words = np.ascontiguousarray(padded).view("<u4")
    h1 = seed[rows].astype(np.uint32)
    with np.errstate(over="ignore"):
        for j in range(words.shape[1]):
            h1 = np.where(j < n // 4, _mix_h1(h1, _mix_k1(words[:, j])), h1)
        for t in range(3):  # the bytes after the last whole word, each sign-extended
            pos = np.minimum(n // 4 * 4 + t, width - 1)
            byte = padded[np.arange(len(rows)), pos].view(np.int8).astype(np.int32).view(np.uint32)
            h1 = np.where(t < n % 4, _mix_h1(h1, _mix_k1(byte)), h1)
        out[rows] = _fmix(h1, n.astype(np.uint32)).view(np.int32)
    return out


def _big_bytes(n: int) -> bytes:
    """Java's ``BigInteger.toByteArray``: the fewest big-endian two's-complement bytes (a decimal of more than 18 digits, unscaled)."""
    return n.to_bytes((n if n >= 0 else ~n).bit_length() // 8 + 1, "big", signed=True)


def _hash_value(seed: pa.Array, kind: pa.Array, number: pa.Array, real: pa.Array, data: pa.Array) -> pa.Array:
    """One value per row hashed with its seed, by its kind (the same on every row: the argument's type); a NULL value keeps the seed."""
    seeds = seed.to_numpy(zero_copy_only=False).astype(np.int32)
    k = kind[0].as_py() if len(kind) else _INT
    if k == _BIG:
        data = pa.array([None if v is None else _big_bytes(int(v)) for v in data.to_pylist()], pa.binary())
    if k in (_BYTES, _BIG):
        return pa.array(np.where(data.is_null().to_numpy(zero_copy_only=False), seeds, hash_binary(seeds, data)), pa.int32())
    values = number if k in (_INT, _LONG) else real
    raw = values.fill_null(0).to_numpy(zero_copy_only=False)
    hashed = (hash_ints(seeds, raw.astype(np.int64).astype(np.int32)) if k == _INT else hash_longs(seeds, raw.astype(np.int64)) if k == _LONG
              else hash_ints(seeds, _float_bits(raw)) if k == _FLOAT else hash_longs(seeds, _double_bits(raw)))
    return pa.array(np.where(values.is_null().to_numpy(zero_copy_only=False), seeds, hashed), pa.int32())


def _crc32(values: pa.Array) -> pa.Array:
    return pa.array([None if v is None else zlib.crc32(v) for v in values.to_pylist()], pa.int64())


def _xxhash_value(seed: pa.Array, kind: pa.Array, number: pa.Array, real: pa.Array, data: pa.Array) -> pa.Array:
    """``xxhash64``: one value per row as XXH64 of the bytes Spark hashes for its kind (an int's 4, a bigint's 8, little-endian), seeded with the hash so far."""
    import xxhash

    seeds = seed.to_numpy(zero_copy_only=False).astype(np.int64)
    k = kind[0].as_py() if len(kind) else _INT
    if k in (_BYTES, _BIG):
        values = data
        items = [v if k == _BYTES or v is None else _big_bytes(int(v)) for v in data.to_pylist()]
    else:
        values = number if k in (_INT, _LONG) else real
        raw = values.fill_null(0).to_numpy(zero_copy_only=False)
        words = (raw.astype(np.int64).astype("<i4") if k == _INT else raw.astype("<i8") if k == _LONG
                 else _float_bits(raw).astype("<i4") if k == _FLOAT else _double_bits(raw).astype("<i8"))
        items = [w.tobytes() for w in np.ascontiguousarray(words).view(np.uint8).reshape(len(raw), -1)]
    nulls = values.is_null().to_numpy(zero_copy_only=False)
    mask = (1 << 64) - 1
    out = [int(s) if null else xxhash.xxh64_intdigest(b, int(s) & mask) for s, b, null in zip(seeds, items, nulls)]
    return pa.array([h - (1 << 64) if h >= 1 << 63 else h for h in out], pa.int64())


def register(con) -> None:
    """Create the hash functions and ``MACROS`` on a DuckDB connection."""
    from duckdb.sqltypes import BIGINT, BLOB, DOUBLE, INTEGER

    con.create_function("__df_hash_value", _hash_value, [INTEGER, INTEGER, BIGINT, DOUBLE, BLOB], INTEGER, type="arrow",
                        null_handling="special", side_effects=False)
    con.create_function("__df_xxhash_value", _xxhash_value, [BIGINT, INTEGER, BIGINT, DOUBLE, BLOB], BIGINT, type="arrow",
                        null_handling="special", side_effects=False)
    con.create_function("__df_crc32_of", _crc32, [BLOB], BIGINT, type="arrow", null_handling="special", side_effects=False)
    con.execute(MACROS)
