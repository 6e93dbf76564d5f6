#!/usr/bin/env bash
# A complete CI job for agent regression tests (docs/ci.md): install, mount, eval, gate, keep the report.
# Settings (environment): SGFS_CI_SEEDS (1-3), SGFS_CI_PER_TYPE (5), SGFS_CI_AGENT (the oracle),
# SGFS_CI_MIN_ACCURACY (0.9), SGFS_CI_OUT (eval-run), SGFS_CI_ARTIFACTS (artifacts), SGFS_CI_JOBS (2).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
seeds="${SGFS_CI_SEEDS:-1-3}"
per_type="${SGFS_CI_PER_TYPE:-5}"
agent="${SGFS_CI_AGENT:-sgfs agent oracle --per-type $per_type}"
min_accuracy="${SGFS_CI_MIN_ACCURACY:-0.9}"
out="${SGFS_CI_OUT:-eval-run}"
artifacts="${SGFS_CI_ARTIFACTS:-artifacts}"

# 1. Install: fuse3 and sgfs (skipped when sgfs is already on PATH).
command -v sgfs >/dev/null 2>&1 || bash "$here/setup.sh"

# 2. Mount the seeds, audited, and make sure the mount goes away whatever happens next.
work="$(mktemp -d)"
mkdir "$work/mnt"
cleanup() {
    sgfs unmount "$work/mnt" 2>/dev/null || fusermount3 -uz "$work/mnt" 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT
sgfs mount "$work/mnt" --seeds "$seeds" --audit "$work/audit.jsonl"

# 3. Evaluate and gate: exit 1 when accuracy is below the bar.
status=0
sgfs eval "$seeds" --per-type "$per_type" --mount "$work/mnt" --audit "$work/audit.jsonl" \
    --agent "$agent" --out "$out" -j "${SGFS_CI_JOBS:-2}" --quiet \
    --min-accuracy "$min_accuracy" --junit "$out/junit.xml" || status=$?

# 4. Keep the report, summary and JUnit XML for the CI system to upload, pass or fail.
mkdir -p "$artifacts"
for file in report summary.json junit.xml results.jsonl; do
    if [ -e "$out/$file" ]; then cp -r "$out/$file" "$artifacts/"; fi
done
exit "$status"
