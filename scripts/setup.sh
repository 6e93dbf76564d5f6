#!/usr/bin/env bash
# Set up sgfs on a fresh Debian machine (run as root): the FUSE library and tools, then the package with
# its development and agent extras. Safe to run again.
set -euo pipefail
cd "$(dirname "$0")/.."

# fuse3: libfuse3 (loaded by the daemon) and fusermount3. libfuse3-dev: the headers the ABI layout test compiles
# against (tests/mount/kernel/test_abi.py), so that every structure sgfs passes to libfuse is checked on this machine.
if ! command -v fusermount3 >/dev/null 2>&1 || ! ldconfig -p 2>/dev/null | grep -q 'libfuse3\.so' ||
    [ ! -f /usr/include/fuse3/fuse_lowlevel.h ]; then
    if command -v apt-get >/dev/null 2>&1; then
        echo "sgfs setup: installing fuse3 (libfuse3, fusermount3) and the libfuse3 headers" >&2
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -qq
        apt-get install -y -qq fuse3 libfuse3-3 libfuse3-dev >/dev/null
    else
        echo "sgfs setup: install libfuse3, fusermount3 and the libfuse3 headers with your package manager" >&2
    fi
fi

# bubblewrap: the sandbox every agent of `sgfs eval` and the Python tool run in (docs/dependencies.md).
if ! command -v bwrap >/dev/null 2>&1; then
    if command -v apt-get >/dev/null 2>&1; then
        echo "sgfs setup: installing bubblewrap (the agents' sandbox)" >&2
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -qq
        apt-get install -y -qq bubblewrap >/dev/null
    else
        echo "sgfs setup: install bubblewrap (bwrap) with your package manager, or evaluate with --no-sandbox" >&2
    fi
fi

python3 -m pip install --quiet --disable-pip-version-check --root-user-action=ignore -e '.[dev,openai,agents]'
# With a pyenv Python, the `sgfs` command becomes visible on PATH only once pyenv refreshes its shims.
if command -v pyenv >/dev/null 2>&1; then
    pyenv rehash
fi
echo "sgfs setup: done ($(python3 -m sgfs --version))" >&2
