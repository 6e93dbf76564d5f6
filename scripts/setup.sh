#!/usr/bin/env bash
# Set up sgfs on a fresh Debian machine (run as root): the FUSE library and tools, then the package with
# its development and agent extras. Safe to run again.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v fusermount3 >/dev/null 2>&1 || ! ldconfig -p 2>/dev/null | grep -q 'libfuse3\.so'; then
    if command -v apt-get >/dev/null 2>&1; then
        echo "sgfs setup: installing fuse3 (libfuse3 and fusermount3)" >&2
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -qq
        apt-get install -y -qq fuse3 libfuse3-3 >/dev/null
    else
        echo "sgfs setup: install libfuse3 and fusermount3 with your package manager" >&2
    fi
fi

# A C compiler builds the request reader that answers listing pages without Python (sgfs/_fastpages.c,
# docs/mount.md); without one the package installs all the same and Python answers them.
if ! command -v cc >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1; then
    echo "sgfs setup: installing a C compiler (gcc) for the listing-page reader" >&2
    export DEBIAN_FRONTEND=noninteractive
    { apt-get update -qq && apt-get install -y -qq gcc libc6-dev >/dev/null; } ||
        echo "sgfs setup: could not install gcc: Python answers listing pages" >&2
fi

python3 -m pip install --quiet --disable-pip-version-check --root-user-action=ignore -e '.[dev,openai,agents]'
# With a pyenv Python, the `sgfs` command becomes visible on PATH only once pyenv refreshes its shims.
if command -v pyenv >/dev/null 2>&1; then
    pyenv rehash
fi
if python3 -c 'import importlib.util, sys; sys.exit(importlib.util.find_spec("sgfs._fastpages") is None)'; then
    reader="listing pages answered in C"
else
    reader="no C compiler: listing pages answered in Python"
fi
echo "sgfs setup: done ($(python3 -m sgfs --version); $reader)" >&2
