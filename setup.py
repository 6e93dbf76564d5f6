"""The one compiled part of sgfs: the request loop's reader in C (sgfs/_fastpages.c, loaded with ctypes).

Optional: where no C compiler is found the build goes on without it, and the daemon answers every request from
Python (docs/mount.md, "Listing pages in C"). Everything else about the package is in pyproject.toml."""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "sgfs._fastpages",
            sources=["sgfs/_fastpages.c"],
            extra_compile_args=["-O2", "-std=c11", "-Wall", "-Wextra", "-D_GNU_SOURCE"],
            optional=True,
        )
    ]
)
