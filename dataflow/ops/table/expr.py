"""A small SQL expression language: parsed and checked when params are validated, never ``eval``-ed.

The grammar is a subset of Spark SQL, so the same text means the same on both engines::

    expr     := or ; or := and (OR and)* ; and := not (AND not)* ; not := NOT not | predicate
    predicate:= sum [(=|==|!=|<>|<|<=|>|>=) sum | IS [NOT] NULL | [NOT] IN (expr, ...)
                     | [NOT] BETWEEN sum AND sum | [NOT] LIKE 'pattern']
    sum      := product ((+|-|'||') product)* ; product := unary ((*|/|%) unary)*
    unary    := (-|+) unary | primary
    primary  := number | 'string' | TRUE | FALSE | NULL | :var | name | `quoted name`
              | CASE WHEN expr THEN expr ... [ELSE expr] END | CAST(expr AS type) | f(expr, ...) | (expr)

``/`` always divides as doubles and yields NULL for a zero divisor; ``%`` is the remainder with the
dividend's sign (NULL for zero). ``:var`` names a value from the step's ``vars`` param.

Examples:
    >>> columns_of(parse("rx_power_dbm < :floor AND link LIKE 'sw1%'"))
    frozenset({'link', 'rx_power_dbm'})
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Union

from pydantic_core import core_schema

from dataflow.ops.table.types import normalize_type, strptime_format

__all__ = [
    "AGGREGATES",
    "PAIRED",
    "FUNCTIONS",
    "AggExpr",
    "Aggregation",
    "Between",
    "Binary",
    "Case",
    "Cast",
    "Col",
    "Expr",
    "ExprError",
    "Func",
    "InList",
    "IsNull",
    "Like",
    "Lit",
    "Node",
    "Param",
    "Unary",
    "WINDOW_FUNCTIONS",
    "WindowAggExpr",
    "WindowExpr",
    "columns_of",
    "params_of",
    "parse",
    "parse_aggregation",
    "parse_window",
]

#: Scalar functions: name -> (fewest, most) arguments (None: any number).
FUNCTIONS: dict[str, tuple[int, int | None]] = {
    "abs": (1, 1), "ceil": (1, 1), "coalesce": (1, None), "concat": (1, None), "exp": (1, 1), "floor": (1, 1),
    "greatest": (2, None), "least": (2, None), "length": (1, 1), "ln": (1, 1), "lower": (1, 1), "power": (2, 2),
    "round": (1, 2), "sqrt": (1, 1), "trim": (1, 1), "unix_timestamp": (2, 2), "upper": (1, 1),
}
#: Aggregate functions (only as the whole of an aggregation): name -> (fewest, most) arguments.
AGGREGATES: dict[str, tuple[int, int]] = {
    "avg": (1, 1), "count": (1, 1), "max": (1, 1), "mean": (1, 1), "min": (1, 1), "percentile_approx": (2, 2),
    "regr_count": (2, 2), "regr_slope": (2, 2), "regr_sxx": (2, 2), "regr_sxy": (2, 2), "regr_syy": (2, 2),
    "slope": (1, 2), "stddev": (1, 1), "stddev_samp": (1, 1), "sum": (1, 1),
}
#: Window functions over ordered rows (``table.window_columns``): name -> (fewest, most) arguments.
WINDOW_FUNCTIONS: dict[str, tuple[int, int]] = {"lag": (1, 2), "lead": (1, 2), "row_number": (0, 0)}
#: Spark's names -> the one name each aggregate is computed under.
_AGG_ALIASES = {"avg": "mean", "regr_slope": "slope", "stddev_samp": "stddev"}
#: Aggregates of (y, x) pairs, Spark's ``regr_*`` family: rows where either is null are skipped.
PAIRED = frozenset({"slope", "regr_count", "regr_sxx", "regr_sxy", "regr_syy"})
_KEYWORDS = {"and", "or", "not", "is", "null", "true", "false", "in", "between", "like", "case", "when", "then", "else", "end", "cast", "as"}
_TOKEN_RE = re.compile(
    r"\s*(?:(?P<num>\d+\.\d*(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?|\d+[eE][+-]?\d+|\d+)"
    r"|(?P<str>'(?:[^']|'')*')|(?P<quoted>`(?:[^`]|``)+`)|(?P<param>:[A-Za-z_]\w*)|(?P<name>[A-Za-z_]\w*)"
    r"|(?P<op><=|>=|<>|!=|==|\|\||[-+*/%=<>(),]))"
)


class ExprError(ValueError):
    """An expression that does not parse or breaks a rule; says where (column) and what."""


@dataclass(frozen=True)
class Lit:
    value: Any


@dataclass(frozen=True)
class Col:
    name: str


@dataclass(frozen=True)
class Param:
    name: str


@dataclass(frozen=True)
class Unary:
    op: str  # "-" or "not"
    arg: Node


@dataclass(frozen=True)
class Binary:
    op: str  # + - * / % || = != < <= > >= and or
    left: Node
    right: Node


@dataclass(frozen=True)
class IsNull:
    arg: Node
    negated: bool = False


@dataclass(frozen=True)
class InList:
    arg: Node
    items: tuple[Node, ...]
    negated: bool = False


@dataclass(frozen=True)
class Between:
    arg: Node
    low: Node
    high: Node
    negated: bool = False


@dataclass(frozen=True)
class Like:
    arg: Node
    pattern: str
    negated: bool = False


@dataclass(frozen=True)
class Case:
    whens: tuple[tuple[Node, Node], ...]
    otherwise: Node | None


@dataclass(frozen=True)
class Cast:
    arg: Node
    type: str


@dataclass(frozen=True)
class Func:
    name: str
    args: tuple[Node, ...]


@dataclass(frozen=True)
class Star:
    """``*`` inside ``count(*)``."""


Node = Union[Lit, Col, Param, Unary, Binary, IsNull, InList, Between, Like, Case, Cast, Func, Star]


@dataclass(frozen=True)
class Aggregation:
    """One aggregate: ``func(arg)`` (``arg`` None for ``count(*)``), plus ``x`` for ``slope(y, x)`` and the
    ``regr_*`` family, and the ``fraction`` of ``percentile_approx(arg, fraction)``."""

    func: str
    arg: Node | None
    x: Node | None = None
    fraction: float | None = None
    offset: int = 1  # rows back (lag) or ahead (lead)


class _Parser:
    def __init__(self, text: str):
        self.text = text
        self.tokens: list[tuple[str, str, int]] = []
        pos = 0
        while pos < len(text):
            m = _TOKEN_RE.match(text, pos)
            if not m or m.end() == pos:
                if text[pos:].strip() == "":
                    break
                col = pos + len(text[pos:]) - len(text[pos:].lstrip()) + 1
                raise ExprError(f"at column {col}: unexpected character {text[col - 1]!r} in {text!r}")
            kind = m.lastgroup
            if kind is None:
                break
            value, start = m.group(kind), m.start(kind) + 1
            if kind == "name" and value.lower() in _KEYWORDS:
                kind, value = "kw", value.lower()
            self.tokens.append((kind, value, start))
            pos = m.end()
        self.i = 0

    def peek(self, kind: str | None = None, value: str | None = None) -> bool:
        if self.i >= len(self.tokens):
            return False
        k, v, _ = self.tokens[self.i]
        return (kind is None or k == kind) and (value is None or v == value)

    def take(self) -> tuple[str, str, int]:
        tok = self.tokens[self.i]
        self.i += 1
        return tok

    def where(self) -> str:
        if self.i < len(self.tokens):
            return f"at column {self.tokens[self.i][2]} ({self.tokens[self.i][1]!r})"
        return "at the end"

    def fail(self, expected: str) -> ExprError:
        return ExprError(f"{self.where()}: expected {expected} in {self.text!r}")

    def expect(self, kind: str, value: str | None = None) -> tuple[str, str, int]:
        if not self.peek(kind, value):
            raise self.fail(repr(value) if value else kind)
        return self.take()

    def accept(self, kind: str, value: str) -> bool:
        if self.peek(kind, value):
            self.i += 1
            return True
        return False

    def parse(self) -> Node:
        if not self.tokens:
            raise ExprError("empty expression")
        node = self.or_()
        if self.i != len(self.tokens):
            raise self.fail("an operator or the end of the expression")
        return node

    def or_(self) -> Node:
        node = self.and_()
        while self.accept("kw", "or"):
            node = Binary("or", node, self.and_())
        return node

    def and_(self) -> Node:
        node = self.not_()
        while self.accept("kw", "and"):
            node = Binary("and", node, self.not_())
        return node

    def not_(self) -> Node:
        if self.accept("kw", "not"):
            return Unary("not", self.not_())
        return self.predicate()

    def predicate(self) -> Node:
        node = self.sum_()
        if self.peek("op") and self.tokens[self.i][1] in ("=", "==", "!=", "<>", "<", "<=", ">", ">="):
            op = self.take()[1]
            op = {"==": "=", "<>": "!="}.get(op, op)
            return Binary(op, node, self.sum_())
        if self.accept("kw", "is"):
            negated = self.accept("kw", "not")
            self.expect("kw", "null")
            return IsNull(node, negated)
        negated = self.accept("kw", "not")
        if self.accept("kw", "in"):
            self.expect("op", "(")
            items = [self.or_()]
            while self.accept("op", ","):
                items.append(self.or_())
            self.expect("op", ")")
            return InList(node, tuple(items), negated)
        if self.accept("kw", "between"):
            low = self.sum_()
            self.expect("kw", "and")
            return Between(node, low, self.sum_(), negated)
        if self.accept("kw", "like"):
            pattern = self.expect("str")[1]
            return Like(node, pattern[1:-1].replace("''", "'"), negated)
        if negated:
            raise self.fail("IN, BETWEEN or LIKE after NOT")
        return node

    def sum_(self) -> Node:
        node = self.product()
        while self.peek("op") and self.tokens[self.i][1] in ("+", "-", "||"):
            node = Binary(self.take()[1], node, self.product())
        return node

    def product(self) -> Node:
        node = self.unary()
        while self.peek("op") and self.tokens[self.i][1] in ("*", "/", "%"):
            node = Binary(self.take()[1], node, self.unary())
        return node

    def unary(self) -> Node:
        if self.accept("op", "-"):
            arg = self.unary()
            if isinstance(arg, Lit) and isinstance(arg.value, (int, float)) and not isinstance(arg.value, bool):
                return Lit(-arg.value)
            return Unary("-", arg)
        if self.accept("op", "+"):
            return self.unary()
        return self.primary()

    def primary(self) -> Node:
        if self.i >= len(self.tokens):
            raise self.fail("a value, a column or '('")
        kind, value, _ = self.tokens[self.i]
        if kind == "num":
            self.i += 1
            return Lit(int(value)) if re.fullmatch(r"\d+", value) else Lit(float(value))
        if kind == "str":
            self.i += 1
            return Lit(value[1:-1].replace("''", "'"))
        if kind == "param":
            self.i += 1
            return Param(value[1:])
        if kind == "quoted":
            self.i += 1
            return Col(value[1:-1].replace("``", "`"))
        if kind == "kw":
            return self.keyword(value)
        if kind == "name":
            self.i += 1
            if self.accept("op", "("):
                return self.call(value.lower())
            return Col(value)
        if self.accept("op", "("):
            node = self.or_()
            self.expect("op", ")")
            return node
        raise self.fail("a value, a column or '('")

    def keyword(self, value: str) -> Node:
        if value in ("true", "false", "null"):
            self.i += 1
            return Lit({"true": True, "false": False, "null": None}[value])
        if value == "case":
            self.i += 1
            whens = []
            while self.accept("kw", "when"):
                cond = self.or_()
                self.expect("kw", "then")
                whens.append((cond, self.or_()))
            if not whens:
                raise self.fail("WHEN after CASE")
            otherwise = self.or_() if self.accept("kw", "else") else None
            self.expect("kw", "end")
            return Case(tuple(whens), otherwise)
        if value == "cast":
            self.i += 1
            self.expect("op", "(")
            arg = self.or_()
            self.expect("kw", "as")
            kind, name, col = self.take() if self.i < len(self.tokens) else (None, "", 0)
            try:
                type_name = normalize_type(name)
            except ValueError as exc:
                raise ExprError(f"at column {col}: {exc} in {self.text!r}") from exc
            self.expect("op", ")")
            return Cast(arg, type_name)
        raise self.fail("a value, a column or '('")

    def call(self, name: str) -> Node:
        args: list[Node] = []
        if self.peek("op", "*") and name == "count":
            self.i += 1
            args.append(Star())
        elif not self.peek("op", ")"):
            args.append(self.or_())
            while self.accept("op", ","):
                args.append(self.or_())
        self.expect("op", ")")
        return Func(name, tuple(args))


def _walk(node: Node):
    yield node
    children: tuple = ()
    if isinstance(node, (Unary, IsNull, Like, Cast)):
        children = (node.arg,)
    elif isinstance(node, Binary):
        children = (node.left, node.right)
    elif isinstance(node, InList):
        children = (node.arg, *node.items)
    elif isinstance(node, Between):
        children = (node.arg, node.low, node.high)
    elif isinstance(node, Case):
        children = tuple(x for pair in node.whens for x in pair) + ((node.otherwise,) if node.otherwise is not None else ())
    elif isinstance(node, Func):
        children = node.args
    for child in children:
        yield from _walk(child)


def _check_scalar(node: Node, text: str) -> None:
    for n in _walk(node):
        if isinstance(n, Func):
            if n.name in AGGREGATES and n.name not in FUNCTIONS:
                raise ExprError(f"aggregate function '{n.name}' is not allowed here (use table.aggregate or table.window_aggregate) in {text!r}")
            if n.name not in FUNCTIONS:
                import difflib

                close = difflib.get_close_matches(n.name, list(FUNCTIONS), n=1)
                hint = f"; did you mean '{close[0]}'?" if close else f" (expected one of: {', '.join(sorted(FUNCTIONS))})"
                raise ExprError(f"unknown function '{n.name}' in {text!r}{hint}")
            low, high = FUNCTIONS[n.name]
            if len(n.args) < low or (high is not None and len(n.args) > high):
                want = f"{low}" if low == high else (f"at least {low}" if high is None else f"{low} to {high}")
                raise ExprError(f"function '{n.name}' takes {want} argument(s), got {len(n.args)} in {text!r}")
            if n.name == "unix_timestamp":
                fmt = n.args[1]
                try:
                    strptime_format(fmt.value if isinstance(fmt, Lit) and isinstance(fmt.value, str) else None)
                except ValueError as exc:
                    raise ExprError(f"unix_timestamp: {exc} in {text!r}") from exc
        if isinstance(n, Star):
            raise ExprError(f"'*' is only allowed in count(*) in {text!r}")


def parse(text: str) -> Node:
    """Parse a scalar expression and check its functions.

    Raises:
        ExprError: the expression does not parse, uses an unknown function, or aggregates.
    """
    node = _Parser(str(text)).parse()
    _check_scalar(node, str(text))
    return node


def parse_aggregation(text: str, *, implicit_x: bool = False) -> Aggregation:
    """Parse an aggregation such as ``count(*)``, ``sum(crc_errors)`` or ``slope(rx_power_dbm, ts)``.

    Args:
        text: The aggregation text.
        implicit_x: Allow ``slope(y)`` (the window's time column is x).

    Raises:
        ExprError: not one aggregate call over scalar arguments.
    """
    node = _Parser(str(text)).parse()
    expected = ", ".join(f"{a}(...)" for a in sorted(AGGREGATES))
    if not isinstance(node, Func) or node.name not in AGGREGATES:
        raise ExprError(f"an aggregation must be one call of {expected}, got {text!r}")
    name = _AGG_ALIASES.get(node.name, node.name)
    low, high = AGGREGATES[node.name]
    if name == "slope" and not implicit_x:
        low = 2
    if not low <= len(node.args) <= high:
        want = f"{low}" if low == high else f"{low} to {high}"
        raise ExprError(f"'{node.name}' takes {want} argument(s), got {len(node.args)} in {text!r}")
    args = list(node.args)
    if isinstance(args[0], Star):  # the parser makes a Star only inside count(...)
        return Aggregation("count", None)
    if name == "percentile_approx":
        p = args[1]
        if not (isinstance(p, Lit) and isinstance(p.value, (int, float)) and not isinstance(p.value, bool) and 0 <= p.value <= 1):
            raise ExprError(f"percentile_approx takes a number between 0 and 1 as its second argument in {text!r}")
        _check_scalar(args[0], str(text))
        return Aggregation(name, args[0], fraction=float(p.value))
    for a in args:
        _check_scalar(a, str(text))
    return Aggregation(name, args[0], args[1] if len(args) > 1 else None)


def parse_window(text: str) -> Aggregation:
    """Parse a window function: an aggregation (over the whole partition), ``lag(x[, n])``,
    ``lead(x[, n])`` (n a positive integer literal, default 1) or ``row_number()``.

    Raises:
        ExprError: not one such call over scalar arguments.
    """
    node = _Parser(str(text)).parse()
    if not isinstance(node, Func) or node.name not in WINDOW_FUNCTIONS:
        try:
            return parse_aggregation(text)
        except ExprError as exc:
            raise ExprError(f"{exc}; or one of lag(x[, n]), lead(x[, n]), row_number()") from exc
    low, high = WINDOW_FUNCTIONS[node.name]
    if not low <= len(node.args) <= high:
        raise ExprError(f"'{node.name}' takes {low} to {high} argument(s), got {len(node.args)} in {text!r}")
    if node.name == "row_number":
        return Aggregation("row_number", None)
    offset = node.args[1] if len(node.args) > 1 else Lit(1)
    if not (isinstance(offset, Lit) and isinstance(offset.value, int) and not isinstance(offset.value, bool) and offset.value > 0):
        raise ExprError(f"'{node.name}' takes a positive integer literal as its offset in {text!r}")
    _check_scalar(node.args[0], str(text))
    return Aggregation(node.name, node.args[0], offset=offset.value)


def columns_of(node: Node | Aggregation) -> frozenset[str]:
    """Return the column names an expression (or aggregation) reads."""
    if isinstance(node, Aggregation):
        return frozenset().union(*(columns_of(a) for a in (node.arg, node.x) if a is not None))
    return frozenset(n.name for n in _walk(node) if isinstance(n, Col))


def params_of(node: Node | Aggregation) -> frozenset[str]:
    """Return the ``:var`` names an expression uses."""
    if isinstance(node, Aggregation):
        return frozenset().union(*(params_of(a) for a in (node.arg, node.x) if a is not None))
    return frozenset(n.name for n in _walk(node) if isinstance(n, Param))


def _check_expr(text: str) -> str:
    parse(text)
    return text


def _check_agg(text: str) -> str:
    parse_aggregation(text)
    return text


def _check_window_agg(text: str) -> str:
    parse_aggregation(text, implicit_x=True)
    return text


def _check_window(text: str) -> str:
    parse_window(text)
    return text


class WindowExpr(str):
    """A window function in a step's params: an aggregation, ``lag``, ``lead`` or ``row_number``."""

    @classmethod
    def __get_pydantic_core_schema__(cls, source, handler):
        return core_schema.no_info_after_validator_function(_check_window, core_schema.str_schema())


class Expr(str):
    """A SQL scalar expression in a step's params; parsed when the params are validated."""

    @classmethod
    def __get_pydantic_core_schema__(cls, source, handler):
        return core_schema.no_info_after_validator_function(_check_expr, core_schema.str_schema())


class AggExpr(str):
    """An aggregation (``count(*)``, ``sum(x)``, ``slope(y, x)``...) in a step's params."""

    @classmethod
    def __get_pydantic_core_schema__(cls, source, handler):
        return core_schema.no_info_after_validator_function(_check_agg, core_schema.str_schema())


class WindowAggExpr(str):
    """An aggregation over a time window; ``slope(y)`` regresses y on the window's time column."""

    @classmethod
    def __get_pydantic_core_schema__(cls, source, handler):
        return core_schema.no_info_after_validator_function(_check_window_agg, core_schema.str_schema())
