"""The FUSE operations of an audited mount: the plain ones plus an ``open`` callback that records each open.

Kept apart from ``sgfs.fuse_ops`` because a plain mount deliberately has no ``open`` callback (one round trip into
Python saved per file), and imported only by the daemon, since it imports mfusepy.
"""

from __future__ import annotations

import mfusepy

from sgfs.fuse_ops import SgfsOperations, _errors


class AuditedOperations(SgfsOperations):
    @_errors
    def open(self, path: str, flags: int) -> int:
        # Every open reaches the daemon (the kernel sends FUSE_OPEN each time), and without keep_cache the kernel
        # drops the file's cached pages on it, so the reads that follow come here too: this is the event that
        # attributes a file to a question even when another question's reads have just filled the page cache.
        if self.audit is not None:
            self.audit.record(mfusepy.fuse_get_context()[2], "open", path, 0)
        return 0
