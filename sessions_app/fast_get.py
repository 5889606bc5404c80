"""Load one row by primary key with SQL the ORM compiled once, for the hottest reads.

``queryset.filter(pk=…)`` compiles its SQL again on every call, which costs more than the indexed read
itself (about 0.3 ms of a request that should take one). ``ByPk`` asks the ORM once per database for the
statement of ``queryset.filter(pk=…)`` (the queryset's own filters included), its column order and the
converters of its columns, then runs it through Django's own cursor (so it is logged, counted and wrapped
like any query) and builds the instance with ``from_db``, as the ORM's iterator does.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.db import connections, models

__all__ = ["ByFields", "ByPk"]

# A key no row has, to find the primary key's place among the compiled statement's parameters.
_MARK = -7_201_938_475_601


class _Compiled:
    __slots__ = ("converters", "fields", "params", "pk_at", "pk_range", "sql")

    def __init__(
        self,
        sql: str,
        params: list[Any],
        pk_at: int,
        fields: list[str],
        converters: dict[int, tuple[list[Any], Any]],
        pk_range: tuple[int | None, int | None],
    ) -> None:
        self.sql = sql
        self.params = params
        self.pk_at = pk_at
        self.fields = fields
        self.converters = converters
        self.pk_range = pk_range


class ByPk[M: models.Model]:
    """``ByPk(lambda: Model.objects.all()).get(pk)``: the row as an instance, or None, like ``.first()``.

    ``queryset`` is called once per database: the rows it leaves out stay out.
    """

    def __init__(self, model: type[M], queryset: Callable[[], models.QuerySet[M]]) -> None:
        self.model = model
        self.queryset = queryset
        self._compiled: dict[str, _Compiled] = {}

    def _compile(self, alias: str) -> _Compiled:
        compiled = self._compiled.get(alias)
        if compiled is None:
            queryset = self.queryset()
            if queryset.model is not self.model or queryset.query.select_related:
                raise TypeError("ByPk reads the model's own columns only")
            compiler = queryset.filter(pk=_MARK).query.get_compiler(using=alias)
            sql, params = compiler.as_sql()
            params = list(params)
            if params.count(_MARK) != 1:
                raise RuntimeError(f"cannot find the primary key among the parameters of {sql}")
            columns = [selected[0] for selected in compiler.select]
            pk_field = self.model._meta.pk
            assert pk_field is not None
            # The ORM answers "no row" for a key its column cannot hold; the database would raise.
            ranges = connections[alias].ops.integer_field_ranges
            compiled = self._compiled[alias] = _Compiled(
                sql,
                params,
                params.index(_MARK),
                [column.target.attname for column in columns],
                compiler.get_converters(columns),
                ranges.get(pk_field.get_internal_type(), (None, None)),
            )
        return compiled

    def get(self, pk: Any, *, using: str = "default") -> M | None:
        compiled = self._compile(using)
        connection = connections[using]
        pk = self.model._meta.pk.get_prep_value(pk)  # type: ignore[union-attr]
        low, high = compiled.pk_range
        if (low is not None and pk < low) or (high is not None and pk > high):
            return None
        params = list(compiled.params)
        params[compiled.pk_at] = pk
        with connection.cursor() as cursor:
            cursor.execute(compiled.sql, params)
            row = cursor.fetchone()
        if row is None:
            return None
        if compiled.converters:
            values = list(row)
            for position, (converters, expression) in compiled.converters.items():
                value = values[position]
                for convert in converters:
                    value = convert(value, expression, connection)
                values[position] = value
            row = values
        return self.model.from_db(using, compiled.fields, row)


# Stand-ins no row holds, one per kind of key, to find each key's place among the compiled parameters.
_TEXT_MARK = "\ue000compiled-key\ue001"


class ByFields[M: models.Model]:
    """``ByFields(Entry, lambda: Entry.objects.all(), "session_id", "entry_id").rows(1, "a3")``: every row
    with those values, as instances, as ``queryset.filter(session_id=1, entry_id="a3")`` would return them.

    For the hottest lookups that are not by primary key; the keys are an integer and a text, each once.
    """

    def __init__(self, model: type[M], queryset: Callable[[], models.QuerySet[M]], *fields: str) -> None:
        if len(fields) != 2:
            raise TypeError("ByFields takes an integer key and a text key")
        self.model = model
        self.queryset = queryset
        self.fields = fields
        self._compiled: dict[str, tuple[str, list[Any], list[int], list[str], dict[int, Any]]] = {}

    def _compile(self, alias: str) -> tuple[str, list[Any], list[int], list[str], dict[int, Any]]:
        compiled = self._compiled.get(alias)
        if compiled is None:
            queryset = self.queryset()
            if queryset.model is not self.model or queryset.query.select_related:
                raise TypeError("ByFields reads the model's own columns only")
            marks = (_MARK, _TEXT_MARK)
            compiler = queryset.filter(**dict(zip(self.fields, marks, strict=True))).query.get_compiler(
                using=alias
            )
            sql, params = compiler.as_sql()
            params = list(params)
            if any(params.count(mark) != 1 for mark in marks):
                raise RuntimeError(f"cannot find the keys among the parameters of {sql}")
            columns = [selected[0] for selected in compiler.select]
            compiled = self._compiled[alias] = (
                sql,
                params,
                [params.index(mark) for mark in marks],
                [column.target.attname for column in columns],
                compiler.get_converters(columns),
            )
        return compiled

    def rows(self, number: int, text: str, *, using: str = "default") -> list[M]:
        sql, template, at, fields, converters = self._compile(using)
        connection = connections[using]
        params = list(template)
        params[at[0]], params[at[1]] = number, text
        with connection.cursor() as cursor:
            cursor.execute(sql, params)
            found = cursor.fetchall()
        result = []
        for row in found:
            if converters:
                values = list(row)
                for position, (steps, expression) in converters.items():
                    value = values[position]
                    for convert in steps:
                        value = convert(value, expression, connection)
                    values[position] = value
                row = values
            result.append(self.model.from_db(using, fields, row))
        return result
