"""``sgfs://`` through fsspec's registry (the ``fsspec.specs`` entry point): listings, ranges and pandas."""

from __future__ import annotations

import errno
import io

import pytest

from tests.helpers import repo

fsspec = pytest.importorskip("fsspec")
pd = pytest.importorskip("pandas")

SEED = 34  # csv, 15 files, with a README
FILE = "quinn_aggregation=SKUstore/forecast_model=ARIMA/horizon_wk=4.csv"
TOP = FILE.split("/")[0]
XLSX_SEED, XLSX_FILE = 22, "BKumar/n_system=cropsoil/oxygen_condition=hypoxic.xlsx"


def test_registered_through_the_entry_point() -> None:
    fs = fsspec.filesystem("sgfs")
    assert type(fs).__module__ == "sgfs.agents.fsspec_fs"
    assert fsspec.get_filesystem_class("sgfs") is type(fs)


def test_listing_info_and_find() -> None:
    fs = fsspec.filesystem("sgfs", seeds=[SEED, 118])
    r = repo(SEED)
    assert fs.ls("", detail=False) == [str(SEED), "118"]
    assert fs.ls(f"sgfs://{SEED}", detail=False) == [f"{SEED}/{e.name}" for e in r.list("")]
    detail = {e["name"]: e for e in fs.ls(str(SEED))}
    assert detail[f"{SEED}/README.md"] == {
        "name": f"{SEED}/README.md",
        "size": len(r.read("README.md")),
        "type": "file",
    }
    assert fs.info(f"{SEED}/{TOP}")["type"] == "directory"
    assert fs.isdir(str(SEED)) and fs.isfile(f"{SEED}/{FILE}") and not fs.exists(f"{SEED}/nope")
    assert sorted(fs.find(f"sgfs://{SEED}")) == sorted(f"{SEED}/{p}" for p in r.file_paths())
    assert fs.glob(f"{SEED}/{TOP}/*/horizon_wk=4.csv") == sorted(
        f"{SEED}/{p}" for p in r.file_paths() if p.startswith(f"{TOP}/") and p.endswith("/horizon_wk=4.csv")
    )
    with pytest.raises(FileNotFoundError):
        fs.info(f"{SEED}/nope.csv")
    with pytest.raises(FileNotFoundError):
        fs.ls("not-a-seed")


def test_bytes_and_ranges_are_those_of_sgfs_cat() -> None:
    fs = fsspec.filesystem("sgfs")
    data = repo(SEED).read(FILE)
    assert fs.cat_file(f"sgfs://{SEED}/{FILE}") == data
    assert fs.cat_file(f"{SEED}/{FILE}", start=10, end=50) == data[10:50]
    assert fs.cat_file(f"{SEED}/{FILE}", start=-20) == data[-20:]
    with fsspec.open(f"sgfs://{SEED}/{FILE}", "rb") as handle:
        handle.seek(100)
        assert handle.read(64) == data[100:164]
        handle.seek(0)
        assert handle.read() == data
    with pytest.raises(IsADirectoryError):
        fs.cat_file(str(SEED))


def test_pandas_reads_sgfs_urls() -> None:
    data = repo(SEED).read(FILE)
    frame = pd.read_csv(f"sgfs://{SEED}/{FILE}")
    pd.testing.assert_frame_equal(frame, pd.read_csv(io.BytesIO(data)))
    sheet = pd.read_excel(f"sgfs://{XLSX_SEED}/{XLSX_FILE}")
    pd.testing.assert_frame_equal(sheet, pd.read_excel(io.BytesIO(repo(XLSX_SEED).read(XLSX_FILE))))


def test_writes_are_refused() -> None:
    fs = fsspec.filesystem("sgfs")
    target = f"{SEED}/new.csv"
    for attempt in (
        lambda: fs.open(target, "wb"),
        lambda: fs.open(f"{SEED}/{FILE}", "ab"),
        lambda: fs.pipe_file(target, b"x"),
        lambda: fs.rm(f"{SEED}/{FILE}"),
        lambda: fs.mkdir(f"{SEED}/new"),
        lambda: fs.touch(target),
        lambda: fs.mv(f"{SEED}/{FILE}", target),
        lambda: fs.cp_file(f"{SEED}/{FILE}", target),
    ):
        with pytest.raises(OSError) as caught:
            attempt()
        assert caught.value.errno == errno.EROFS
    assert not fs.exists(target)
