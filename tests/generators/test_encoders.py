"""Six encodings of one table: each parses back to the same rows; xlsx is byte-for-byte deterministic."""

from __future__ import annotations

import io
import json
import re
import shlex
import zipfile

import openpyxl
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from generators.encoders import encode
from generators.synth import Table
from tests.helpers import repo, with_extension

SEEDS = [1, 3, 118, 205]


def expected_frame(table: Table) -> pd.DataFrame:
    data = {}
    for column in table.columns:
        if column.type == "integer":
            data[column.name] = pd.Series(column.values, dtype="int64")
        elif column.type == "continuous":
            data[column.name] = pd.Series(column.values, dtype="float64")
        else:
            data[column.name] = pd.Series(column.text, dtype="object")
    return pd.DataFrame(data)


def parse_log(content: bytes) -> pd.DataFrame:
    records = []
    for line in content.decode("utf-8").splitlines():
        stamp, _, rest = line.partition(" ")
        record = dict(token.split("=", 1) for token in shlex.split(rest))
        assert stamp in record.values()
        records.append(record)
    return pd.DataFrame(records)


def parse(content: bytes, extension: str) -> pd.DataFrame:
    stream = io.BytesIO(content)
    options = {"keep_default_na": False}
    if extension == "csv":
        return pd.read_csv(stream, **options)
    if extension == "txt":
        return pd.read_csv(stream, sep="\t", **options)
    if extension == "json":
        return pd.read_json(stream, orient="records", dtype=False, precise_float=True)
    if extension == "jsonl":
        return pd.read_json(stream, lines=True, dtype=False, precise_float=True)
    if extension == "xlsx":
        return pd.read_excel(stream, **options)
    if extension == "log":
        return parse_log(content)
    raise AssertionError(extension)


def normalise(frame: pd.DataFrame, like: Table) -> pd.DataFrame:
    out = {}
    for column in like.columns:
        series = frame[column.name]
        if column.type == "integer":
            out[column.name] = pd.to_numeric(series).astype("int64")
        elif column.type == "continuous":
            out[column.name] = pd.to_numeric(series).astype("float64")
        else:
            out[column.name] = series.astype(str).astype("object")
    return pd.DataFrame(out)


@pytest.mark.parametrize("seed", SEEDS)
def test_every_format_parses_back_to_the_same_table(seed: int, extension: str) -> None:
    r = with_extension(seed, extension)
    for path in r.tree.file_paths[:3]:
        table = r.table(path)
        content = r.read(path)
        frame = parse(content, extension)
        assert list(frame.columns) == list(table.names)
        pd.testing.assert_frame_equal(normalise(frame, table), expected_frame(table), check_exact=True)


@pytest.mark.parametrize("seed", SEEDS)
def test_json_layouts_equal_the_standard_library(seed: int) -> None:
    """Same records as the table, laid out as json.dumps does; numbers keep their %.6g text."""
    table = repo(seed).table(repo(seed).tree.file_paths[0])
    number = re.compile(r"-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?(?=,?$)")
    records = json.loads(encode(table, "json"))
    assert records == [
        {c.name: (c.values[i].item() if c.numeric else c.text[i]) for c in table.columns} for i in range(table.n_rows)
    ]

    def shape(text: str) -> list[str]:
        return [number.sub("N", line) for line in text.splitlines()]

    assert shape(encode(table, "json").decode()) == shape(json.dumps(records, indent=2, ensure_ascii=False))
    lines = encode(table, "jsonl").decode().splitlines()
    assert [json.loads(line) for line in lines] == records
    assert [re.sub(r": [-\d.eE+]+", ": N", line) for line in lines] == [
        re.sub(r": [-\d.eE+]+", ": N", json.dumps(r, ensure_ascii=False)) for r in records
    ]


def test_numbers_read_the_same_in_every_format() -> None:
    """One table encoded six ways: every statistic computed from any format is identical."""
    r = repo(118)
    table = r.table(r.tree.file_paths[0])
    numeric = [c.name for c in table.columns if c.numeric]
    summaries = set()
    for extension in ("csv", "json", "jsonl", "xlsx", "txt", "log"):
        frame = normalise(parse(encode(table, extension), extension), table)
        summaries.add(tuple(frame[numeric].agg(["mean", "std", "median"]).to_numpy().ravel().tolist()))
    assert len(summaries) == 1


def test_xlsx_is_deterministic_and_valid() -> None:
    r = with_extension(118, "xlsx")
    path = r.tree.file_paths[0]
    first = r.read(path)
    assert with_extension(118, "xlsx").read(path) == first
    with zipfile.ZipFile(io.BytesIO(first)) as archive:
        assert {i.date_time for i in archive.infolist()} == {(1980, 1, 1, 0, 0, 0)}
        assert archive.testzip() is None
    workbook = openpyxl.load_workbook(io.BytesIO(first), read_only=True)
    sheet = workbook.active
    assert sheet is not None and sheet.title == "data"
    rows = list(sheet.iter_rows(values_only=True))
    table = r.table(path)
    assert rows[0] == table.names
    assert len(rows) == table.n_rows + 1


def _zipfile_archive(parts: list[tuple[str, str]]) -> bytes:
    """The archive as the standard library writes it from the same entries: what encode_xlsx must equal."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_STORED) as archive:
        for name, text in parts:
            info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_STORED
            info.external_attr = 0o644 << 16
            info.create_system = 0
            archive.writestr(info, text.encode("utf-8"))
    return buffer.getvalue()


@given(
    st.lists(
        st.tuples(st.from_regex(r"part/[a-z_/]{1,20}\.xml", fullmatch=True), st.text(max_size=300)),
        max_size=4,
        unique_by=lambda part: part[0],
    ),
    st.text(max_size=2000),
)
def test_stored_zip_is_byte_for_byte_what_zipfile_writes(fixed: list[tuple[str, str]], last: str) -> None:
    from generators.storedzip import StoredZip

    archive = StoredZip([(name, text.encode("utf-8")) for name, text in fixed])
    data = last.encode("utf-8")
    expected = _zipfile_archive([*fixed, ("last.xml", last)])
    assert archive.archive("last.xml", data) == expected
    assert archive.size("last.xml", len(data)) == len(expected)


@pytest.mark.parametrize("seed", [118, 205, 7])
def test_xlsx_archive_is_byte_for_byte_what_zipfile_writes(seed: int) -> None:
    from generators.encoders import _FIXED_PARTS, _SHEET, _sheet_xml, encoded_size

    r = with_extension(seed, "xlsx")
    for path in r.tree.file_paths[:3]:
        table = r.table(path)
        expected = _zipfile_archive([*_FIXED_PARTS, (_SHEET, _sheet_xml(table))])
        assert encode(table, "xlsx") == expected
        assert encoded_size(table, "xlsx") == len(expected)


@given(
    st.lists(st.sampled_from(["%s", "%%", "a", ",", "\n", '"', "é", "s"]), max_size=12),
    st.integers(0, 5),
    st.sampled_from(["", "\n", ",\n"]),
)
def test_render_equals_one_percent_format_per_row(tokens: list[str], rows: int, separator: str) -> None:
    from generators.encoders import _render

    template = "".join(tokens)
    slots = tokens.count("%s")
    cells = [[f"{c}{r}%" * (r % 3) for r in range(rows)] for c in range(slots)]
    if slots == 0:
        return  # a table always has columns
    assert _render(template, cells, separator) == separator.join(template % row for row in zip(*cells, strict=True))


def test_integer_texts_are_str_of_every_integer() -> None:
    import numpy as np

    from generators.synth import integer_texts

    for ints in ([0, 1, 4095], [4096, 7], [-1, 3], [], list(range(300)), [2**62, -(2**62)]):
        assert integer_texts(np.array(ints, dtype=np.int64)) == [str(i) for i in ints]


def test_render_refuses_columns_of_other_lengths() -> None:
    from generators.encoders import _render

    with pytest.raises(ValueError):
        _render("%s,%s", [["1", "2"], ["1"]])
    with pytest.raises(ValueError):
        _render("%s,%s", [["1", "2"]])


def test_batched_sizes_equal_encoded_lengths(extension: str) -> None:
    """Repository.sizes measures continuous text without writing it: the same numbers as the bytes."""
    from generators import PathNotFound

    r = with_extension(118, extension)
    paths = [*r.tree.file_paths[:12], "no/such/file.csv"]
    sizes = r.sizes(paths)
    assert sizes[:-1] == [len(r.read(p)) for p in paths[:-1]]
    assert isinstance(sizes[-1], PathNotFound)
    assert [r.size(p) for p in paths[:-1]] == sizes[:-1]


def test_csv_quotes_per_rfc4180() -> None:
    from generators.encoders import _csv_quote, _log_quote

    assert _csv_quote("plain") == "plain"
    assert _csv_quote("a,b") == '"a,b"'
    assert _csv_quote('say "hi"') == '"say ""hi"""'
    assert _csv_quote(" padded") == '" padded"'
    assert _log_quote("heat shock") == '"heat shock"'
    assert _log_quote('a"b') == '"a\\"b"'
    assert _log_quote("") == '""'


def test_categories_with_spaces_survive_log_and_csv() -> None:
    # Find a repository with a category containing a space (the vocabularies have several).
    for seed in range(1, 200):
        spec = repo(seed).spec
        if any(" " in c for v in spec.variables for c in v.categories):
            break
    else:
        raise AssertionError("no category with a space in seeds 1-199")
    for extension in ("csv", "log", "txt"):
        r = with_extension(seed, extension)
        path = r.tree.file_paths[0]
        table = r.table(path)
        frame = normalise(parse(r.read(path), extension), table)
        pd.testing.assert_frame_equal(frame, expected_frame(table), check_exact=True)
