"""Spark's URL functions as DuckDB nodes: ``parse_url`` as Java's ``java.net.URI`` splits a URL, ``url_encode``/``url_decode`` as Java's ``URLEncoder``/``URLDecoder``.

``parse_url`` splits the URL by RFC 3986's regular expression (scheme, authority, path, query,
fragment). A part that is absent is NULL and one that is present but empty is ``''``, as Java's
getters give them; an opaque URL (``mailto:a@b.c``) has no path, query, host or authority; HOST is
NULL where Java finds no server-based host (``my_host``, a port that is no number). A URL holding a
character a URI may not hold (a space, a double quote, a backslash, a backtick, one of ``<>^{|}``,
a ``%`` without two hex digits) stops the step, as Spark's INVALID_URL error does (``try_parse_url``:
NULL); Java's finer checks are not repeated. The part and the query key must be literals (Spark
builds the key into a regular expression, unescaped, as here).
"""
from __future__ import annotations

from sqlglot import exp

from dataflow.ops.table.duck_nodes import call as _fn

__all__ = ["by_name", "parse_url"]

_URL = r"^(?:([^:/?#]+):)?(?://([^/?#]*))?([^?#]*)(?:\?([^#]*))?(?:#(.*))?$"  # RFC 3986, appendix B
_INVALID = r"[ \"<>\\^`{|}]|%($|.$|[^0-9A-Fa-f]|.[^0-9A-Fa-f])"
_LABEL = r"[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?"
_HOST = rf"^(\[[0-9A-Fa-f:.]+\]|[0-9]+(\.[0-9]+){{3}}|({_LABEL}\.)*[A-Za-z]([A-Za-z0-9-]*[A-Za-z0-9])?\.?)$"
_SERVER = r"^(?:[^@]*@)?([^@:]*|\[[^\]]*\])(?::([0-9]*))?$"  # userinfo, host, port


def _s(text: str) -> exp.Literal:
    return exp.Literal.string(text)


def _group(url: exp.Expression, n: int) -> exp.Expression:
    return _fn("regexp_extract", url.copy(), _s(_URL), exp.Literal.number(n))


def _has(url: exp.Expression, pattern: str) -> exp.Expression:
    return _fn("regexp_matches", url.copy(), _s(pattern))


def _when(cond: exp.Expression, value: exp.Expression) -> exp.Expression:
    return exp.Case(ifs=[exp.If(this=cond, true=value)])


def _part(url: exp.Expression, part: str, key: str | None) -> exp.Expression:
    hierarchical = exp.Not(this=_has(url, r"^[^:/?#]+:[^/]"))  # an opaque URL (scheme:rest, rest not from '/') has no path, query or authority
    query = _when(exp.and_(hierarchical, _has(url, r"^[^#]*\?")), _group(url, 4))
    authority = _when(exp.and_(_has(url, r"^([^:/?#]+:)?//"), exp.NEQ(this=_group(url, 2), expression=_s(""))), _group(url, 2))
    if part == "QUERY" and key is not None:
        found = _fn("regexp_extract", query, _s(f"(&|^){key}=([^&]*)"), exp.Literal.number(2))
        return _when(_fn("regexp_matches", query.copy(), _s(f"(&|^){key}=")), found)
    if part == "QUERY":
        return query
    if part == "PATH":
        return _when(hierarchical, _group(url, 3))
    if part == "FILE":
        with_query = exp.DPipe(this=exp.DPipe(this=_group(url, 3), expression=_s("?")), expression=query.copy())
        return _when(hierarchical, exp.Coalesce(this=with_query, expressions=[_group(url, 3)]))
    if part == "REF":
        return _when(_has(url, "#"), _group(url, 5))
    if part == "PROTOCOL":
        return _when(_has(url, "^[^:/?#]+:"), _group(url, 1))
    if part == "AUTHORITY":
        return authority
    if part == "USERINFO":
        return _when(_fn("contains", authority.copy(), _s("@")), _fn("regexp_extract", authority, _s("^([^@]*)@"), exp.Literal.number(1)))
    if part == "HOST":
        host = _fn("regexp_extract", authority.copy(), _s(_SERVER), exp.Literal.number(1))
        return _when(exp.and_(_fn("regexp_matches", authority, _s(_SERVER)), _fn("regexp_matches", host.copy(), _s(_HOST))), host)
    return exp.Null()  # Spark's part names are upper case: another is NULL


def parse_url(node: exp.ParseUrl) -> exp.Expression | None:
    """``parse_url(url, part[, key])`` as DuckDB nodes; None where the part or the key is no literal."""
    return _parsed(node.this, node.args.get("part_to_extract"), node.args.get("key"), strict=True)


def _parsed(url: exp.Expression, part: exp.Expression | None, key: exp.Expression | None, strict: bool) -> exp.Expression | None:
    """The part of ``url``; an invalid URL stops the step (``strict``: ``parse_url``) or is NULL (``try_parse_url``)."""
    if not (isinstance(part, exp.Literal) and part.is_string) or key is not None and not (isinstance(key, exp.Literal) and key.is_string):
        return None
    invalid = _fn("error", exp.DPipe(this=_s("parse_url: not a valid URL (Spark: INVALID_URL): "), expression=url.copy())) if strict else exp.Null()
    return exp.Case(ifs=[exp.If(this=_has(url, _INVALID), true=invalid)], default=_part(url, part.name, key.name if key is not None else None))


def by_name(name: str, args: list[exp.Expression]) -> exp.Expression | None:
    """``try_parse_url``, ``url_encode`` and ``url_decode`` as DuckDB nodes; None for other names."""
    if name == "try_parse_url" and len(args) in (2, 3):
        return _parsed(args[0], args[1], args[2] if len(args) == 3 else None, strict=False)
    if name == "url_encode":  # Java's URLEncoder: a space as '+', '*' kept, '~' escaped
        encoded = _fn("url_encode", args[0])
        for find, put in (("%20", "+"), ("~", "%7E"), ("%2A", "*")):
            encoded = _fn("replace", encoded, _s(find), _s(put))
        return encoded
    if name == "url_decode":  # Java's URLDecoder: '+' is a space
        return _fn("url_decode", _fn("replace", args[0], _s("+"), _s(" ")))
    return None
