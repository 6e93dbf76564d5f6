"""The ABI sgfs owns (sgfs.mount.kernel.abi) against the installed libfuse 3 headers: a C program compiled here
prints every size, field offset and flag bit, and each must equal the ctypes layout. Without a C compiler or the
headers (libfuse3-dev) the layout tests are skipped, and fail in CI, where scripts/setup.sh installs the headers."""

from __future__ import annotations

import ctypes
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from sgfs.mount.kernel import abi
from sgfs.mount.kernel.loop import needs_init_rewrite
from tests.helpers.mounts import require_fuse

HEADER = "/usr/include/fuse3/fuse_lowlevel.h"

# (C struct, ctypes structure, fields compared by offset). A ctypes structure may be longer than its C struct
# only where it says so (Buf keeps room for fields later versions append) or shorter where it is only read
# through libfuse's pointer (ConnInfo, LowLevelOps: a prefix).
STRUCTS: list[tuple[str, type[ctypes.Structure], str]] = [
    ("struct stat", abi.Stat, "exact"),
    ("struct statvfs", abi.StatVfs, "exact"),
    ("struct fuse_file_info", abi.FileInfo, "exact"),
    ("struct fuse_args", abi.Args, "exact"),
    ("struct fuse_entry_param", abi.EntryParam, "exact"),
    ("struct fuse_ctx", abi.Ctx, "exact"),
    ("struct fuse_conn_info", abi.ConnInfo, "prefix"),
    ("struct fuse_lowlevel_ops", abi.LowLevelOps, "prefix"),
    ("struct fuse_buf", abi.Buf, "room"),
]
# ctypes names that differ from the C member they stand for (C spells them through macros or reserved names).
C_NAMES = {"st_atimespec": "st_atim", "st_mtimespec": "st_mtim", "st_ctimespec": "st_ctim"}
FILE_INFO_BITS = ["writepage", "direct_io", "keep_cache", "flush", "nonseekable", "flock_release", "cache_readdir",
                  "noflush"]  # fmt: skip


def fields(structure: type[ctypes.Structure]) -> list[str]:
    """The members a C program can name: no padding or reserved members, no bit fields (checked by bit)."""
    return [
        field[0]
        for field in structure._fields_
        if len(field) == 2 and not field[0].startswith("__") and field[0] not in ("spare", "padding2")
    ]


def c_program() -> str:
    lines = [
        "#define FUSE_USE_VERSION 31",
        "#include <fuse_lowlevel.h>",
        "#include <stddef.h>",
        "#include <stdio.h>",
        "#include <string.h>",
        "#include <sys/stat.h>",
        "#include <sys/statvfs.h>",
        "int main(void) {",
    ]
    for c_struct, structure, _kind in STRUCTS:
        lines.append(f'printf("size {c_struct} %zu\\n", sizeof({c_struct}));')
        for name in fields(structure):
            member = C_NAMES.get(name, name)
            lines.append(f'printf("offset {c_struct} {name} %zu\\n", offsetof({c_struct}, {member}));')
    for bit in FILE_INFO_BITS:
        lines += [
            "{ struct fuse_file_info fi; unsigned char *b = (unsigned char *)&fi; size_t i;",
            f"  memset(&fi, 0, sizeof fi); fi.{bit} = 1;",
            f'  for (i = 0; i < sizeof fi; i++) if (b[i]) printf("bit {bit} %zu %u\\n", i, (unsigned)b[i]); }}',
        ]
    for name, value in (
        ("FUSE_CAP_READDIRPLUS", abi.FUSE_CAP_READDIRPLUS),
        ("FUSE_CAP_READDIRPLUS_AUTO", abi.FUSE_CAP_READDIRPLUS_AUTO),
        ("FUSE_CAP_NO_OPEN_SUPPORT", abi.FUSE_CAP_NO_OPEN_SUPPORT),
        ("FUSE_CAP_NO_OPENDIR_SUPPORT", abi.FUSE_CAP_NO_OPENDIR_SUPPORT),
    ):
        lines.append(f'printf("constant {name} %u %u\\n", (unsigned)({name}), {value}u);')
    lines += ["return 0;", "}"]
    return "\n".join(lines) + "\n"


@pytest.fixture(scope="module")
def c_layout(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    compiler = shutil.which("cc") or shutil.which("gcc")
    problem = None if compiler else "no C compiler"
    if problem is None and not Path(HEADER).exists():
        problem = f"{HEADER} is missing (install libfuse3-dev: scripts/setup.sh does)"
    if problem is not None:
        if os.environ.get("CI") == "true":
            pytest.fail(f"the ABI layout cannot be checked in CI: {problem}")
        pytest.skip(problem)
    assert compiler is not None
    folder = tmp_path_factory.mktemp("abi")
    source, binary = folder / "layout.c", folder / "layout"
    source.write_text(c_program())
    subprocess.run(
        [compiler, "-D_FILE_OFFSET_BITS=64", "-I/usr/include/fuse3", "-o", str(binary), str(source)],
        check=True,
        capture_output=True,
    )
    return subprocess.run([str(binary)], check=True, capture_output=True, text=True).stdout.splitlines()


@pytest.mark.parametrize(("c_struct", "structure", "kind"), STRUCTS, ids=[s[0] for s in STRUCTS])
def test_struct_layout_matches_the_headers(
    c_layout: list[str], c_struct: str, structure: type[ctypes.Structure], kind: str
) -> None:
    sizes = {
        line.split(" ", 1)[1].rsplit(" ", 1)[0]: int(line.rsplit(" ", 1)[1])
        for line in c_layout
        if line.startswith("size ")
    }
    offsets = {
        line.rsplit(" ", 2)[1]: int(line.rsplit(" ", 1)[1])
        for line in c_layout
        if line.startswith(f"offset {c_struct} ")
    }
    names = fields(structure)
    assert sorted(offsets) == sorted(names)
    for name in names:
        assert getattr(structure, name).offset == offsets[name], (c_struct, name)
    size = ctypes.sizeof(structure)
    if kind == "exact":
        assert size == sizes[c_struct], c_struct
    elif kind == "prefix":
        assert size <= sizes[c_struct], c_struct
    else:
        assert size >= sizes[c_struct], c_struct


def test_file_info_flag_bits_match_the_headers(c_layout: list[str]) -> None:
    """keep_cache and cache_readdir are what the mount sets: each must land on libfuse 3's bit."""
    c_bits = {
        line.split()[1]: (int(line.split()[2]), int(line.split()[3])) for line in c_layout if line.startswith("bit ")
    }
    for name in FILE_INFO_BITS:
        info = abi.FileInfo()
        setattr(info, name, 1)
        raw = bytes(info)
        ours = [(i, b) for i, b in enumerate(raw) if b]
        assert ours == [c_bits[name]], name


def test_capability_flags_match_the_headers(c_layout: list[str]) -> None:
    for line in c_layout:
        if line.startswith("constant "):
            _, name, theirs, ours = line.split()
            assert theirs == ours, name


def test_libfuse_3_is_loaded_whatever_else_is_installed() -> None:
    """Never libfuse 2 (libfuse.so.2), even where it is installed beside libfuse 3."""
    require_fuse()
    lib = abi.load_libfuse()
    assert "fuse3" in Path(lib._name).name
    assert abi.libfuse_version(lib).startswith("3.")


@pytest.mark.parametrize(
    ("version", "rewrite"),
    [("3.14.0", True), ("3.16.2", True), ("3.17.0", True), ("3.17.1", False), ("3.18.0", False), ("4.0", False),
     ("garbage", True)],
)  # fmt: skip
def test_the_init_reply_is_rewritten_only_where_libfuse_lacks_the_fix(version: str, rewrite: bool) -> None:
    assert needs_init_rewrite(version) is rewrite
