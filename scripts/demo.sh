#!/usr/bin/env bash
# The main job on the embedded default: mount seeds 1-100 and 118, show repository 118 as an agent sees it.
# Leaves the filesystem mounted for you to explore; unmount with `sgfs unmount "$MNT"`.
set -euo pipefail
MNT="${SGFS_MNT:-/mnt/sgfs}"
sgfs() { if command -v sgfs >/dev/null 2>&1; then command sgfs "$@"; else python3 -m sgfs "$@"; fi; }
mkdir -p "$MNT"
if mountpoint -q "$MNT"; then
    echo "demo: $MNT is already mounted; reusing it" >&2
else
    sgfs mount "$MNT" --seeds 1-100,118
fi
echo "== ls $MNT (first 5 of the seeds given)"
ls "$MNT" | sed -n 1,5p  # sed reads all input: no SIGPIPE under pipefail
echo "== ls $MNT/118/"
ls -C "$MNT/118/"
echo "== find $MNT/118 -type f | wc -l"
find "$MNT/118" -type f | wc -l
file=$(find "$MNT/118" -type f -name '*.*' ! -name README.md | LC_ALL=C sort | sed -n 1p)
echo "== first data file: $file ($(stat -c %s "$file") bytes)"
case "$file" in
    *.xlsx) python3 -c "import pandas, sys; print(pandas.read_excel(sys.argv[1]).head(8).to_string())" "$file" ;;
    *) head -n 8 "$file" ;;
esac
echo
echo "Mounted at $MNT. Explore with ls/cat/find/pandas; unmount with: sgfs unmount $MNT"
