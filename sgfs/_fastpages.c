/* The request loop's reader in C: reads the kernel's requests and answers, without entering Python, every
 * READDIRPLUS of a directory whose listing book is registered (sgfs/fast_pages.py); any other request goes back
 * to Python, which dispatches it through libfuse as before.
 *
 * Why: a walk of a fresh mount is ~two READDIRPLUS per directory, and answering one from Python (a ctypes call
 * into libfuse, its dispatcher, our callback, the reply) costs 20-60 us cache-cold, several times the kernel's
 * own round trip. Here a page is a hash lookup, a binary search over the book's record ends and one writev.
 *
 * The kernel counts a lookup for every entry of a READDIRPLUS reply that carries a node id; Python's inode
 * table must count it too (FORGET will take it back). So every page served here is logged as (book, first
 * record, end record), and Python counts the log's lookups before it dispatches the next request: a FORGET
 * reaches Python only after the lookups it undoes are counted.
 *
 * Only the request loop's thread calls these functions, and never two at once: the tables need no lock. The
 * byte layouts are the kernel's (<linux/fuse.h>): a 40-byte fuse_in_header (len, opcode, unique, nodeid, ...),
 * fuse_read_in after it (fh, offset, size, ...), and a 16-byte fuse_out_header (len, error, unique). */

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#define FUSE_READDIRPLUS 44
#define IN_HEADER 40
#define READ_IN_SIZE_END (IN_HEADER + 20) /* fh (8), offset (8), size (4) */
#define OUT_HEADER 16

/* Returned by sgfs_pages_receive when the lookup log is full: count it, then call again. Not an errno. */
#define SGFS_PAGES_DRAIN (-100000)

struct folder {
    uint64_t ino; /* 0: a free slot */
    const uint8_t *blob;
    const uint64_t *ends; /* ends[i]: where record i of the book ends in blob */
    int64_t lo, hi;       /* the directory's records: '.', '..', then its entries */
    int64_t book;
};

struct sgfs_pages {
    struct folder *table; /* open addressing, linear probing; at most half full */
    uint64_t capacity;    /* a power of two */
    uint64_t used;
    int64_t *log; /* (book, first, end) per page served */
    int64_t log_capacity, log_length;
    uint64_t served; /* pages answered here */
    uint64_t write_errors;
    int (*exited)(void *); /* fuse_session_exited */
    void *session;
};

static uint64_t slot_of(uint64_t ino, uint64_t mask) {
    /* inode numbers are xxhash digests already: their low bits are well mixed */
    return ino & mask;
}

struct sgfs_pages *sgfs_pages_new(int64_t log_capacity, int (*exited)(void *), void *session) {
    struct sgfs_pages *pages = calloc(1, sizeof *pages);
    if (pages == NULL)
        return NULL;
    pages->capacity = 1024;
    pages->table = calloc(pages->capacity, sizeof *pages->table);
    pages->log_capacity = log_capacity > 0 ? log_capacity : 1;
    pages->log = calloc((size_t)pages->log_capacity * 3, sizeof *pages->log);
    if (pages->table == NULL || pages->log == NULL) {
        free(pages->table);
        free(pages->log);
        free(pages);
        return NULL;
    }
    pages->exited = exited;
    pages->session = session;
    return pages;
}

void sgfs_pages_free(struct sgfs_pages *pages) {
    if (pages == NULL)
        return;
    free(pages->table);
    free(pages->log);
    free(pages);
}

/* Place entry in its slot (its own, or the first free one after it); 1 when that slot was free. */
static int put(struct folder *table, uint64_t mask, const struct folder *entry) {
    uint64_t at = slot_of(entry->ino, mask);
    while (table[at].ino != 0 && table[at].ino != entry->ino)
        at = (at + 1) & mask;
    int was_free = table[at].ino == 0;
    table[at] = *entry;
    return was_free;
}

static int grow(struct sgfs_pages *pages, uint64_t wanted) {
    uint64_t capacity = pages->capacity;
    while (capacity < 2 * wanted)
        capacity *= 2;
    if (capacity == pages->capacity)
        return 0;
    struct folder *table = calloc(capacity, sizeof *table);
    if (table == NULL)
        return -1;
    for (uint64_t i = 0; i < pages->capacity; i++)
        if (pages->table[i].ino != 0)
            put(table, capacity - 1, &pages->table[i]);
    free(pages->table);
    pages->table = table;
    pages->capacity = capacity;
    return 0;
}

/* Register the directories of one book: inos[k] has records [los[k], his[k]) of blob/ends. 0, or -1 when out
 * of memory (nothing registered). A number registered twice keeps its last registration. */
int sgfs_pages_add_book(struct sgfs_pages *pages, int64_t book, const uint8_t *blob, const uint64_t *ends,
                        int64_t folders, const uint64_t *inos, const int64_t *los, const int64_t *his) {
    if (folders < 0 || grow(pages, pages->used + (uint64_t)folders) != 0)
        return -1;
    uint64_t mask = pages->capacity - 1;
    for (int64_t k = 0; k < folders; k++) {
        if (inos[k] == 0)
            continue;
        struct folder entry = {inos[k], blob, ends, los[k], his[k], book};
        pages->used += (uint64_t)put(pages->table, mask, &entry);
    }
    return 0;
}

/* Forget every registered directory (Python registers the books it keeps again). */
void sgfs_pages_clear(struct sgfs_pages *pages) {
    memset(pages->table, 0, pages->capacity * sizeof *pages->table);
    pages->used = 0;
}

static const struct folder *find(const struct sgfs_pages *pages, uint64_t ino) {
    uint64_t mask = pages->capacity - 1;
    for (uint64_t at = slot_of(ino, mask);; at = (at + 1) & mask) {
        if (pages->table[at].ino == ino)
            return &pages->table[at];
        if (pages->table[at].ino == 0)
            return NULL;
    }
}

/* How many of records [first, hi) end at or before limit: the records that fit (ends grow). */
static int64_t fitting_end(const uint64_t *ends, int64_t first, int64_t hi, uint64_t limit) {
    int64_t lo = first;
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        if (ends[mid] <= limit)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Answer the READDIRPLUS in request[0:length] if its directory is registered; 1 when answered, else 0. */
static int serve(struct sgfs_pages *pages, int fd, const uint8_t *request, size_t length) {
    uint32_t opcode, size;
    uint64_t unique, nodeid, offset;
    if (length < READ_IN_SIZE_END)
        return 0;
    memcpy(&opcode, request + 4, 4);
    if (opcode != FUSE_READDIRPLUS)
        return 0;
    memcpy(&nodeid, request + 16, 8);
    const struct folder *folder = find(pages, nodeid);
    if (folder == NULL)
        return 0;
    memcpy(&unique, request + 8, 8);
    memcpy(&offset, request + IN_HEADER + 8, 8);
    memcpy(&size, request + IN_HEADER + 16, 4);
    int64_t first = 0, end = 0;
    uint64_t base = 0, stop = 0;
    if (offset < (uint64_t)(folder->hi - folder->lo)) { /* else past the end: the empty page */
        first = folder->lo + (int64_t)offset;
        base = first > 0 ? folder->ends[first - 1] : 0;
        end = fitting_end(folder->ends, first, folder->hi, base + size);
        stop = end > first ? folder->ends[end - 1] : base; /* none fits: the empty page */
    }
    uint8_t header[OUT_HEADER];
    uint32_t reply_length = (uint32_t)(OUT_HEADER + (stop - base));
    int32_t error = 0;
    memcpy(header, &reply_length, 4);
    memcpy(header + 4, &error, 4);
    memcpy(header + 8, &unique, 8);
    struct iovec parts[2] = {{header, OUT_HEADER}, {(void *)(folder->blob + base), (size_t)(stop - base)}};
    ssize_t written = writev(fd, parts, stop > base ? 2 : 1);
    /* ENOENT: the request was interrupted meanwhile, which the kernel allows; any other failure is counted
     * (libfuse would print it) and the loop goes on, as libfuse's does. */
    if (written < 0 && errno != ENOENT)
        pages->write_errors++;
    pages->served++;
    if (end > first) {
        int64_t *entry = pages->log + 3 * pages->log_length++;
        entry[0] = folder->book;
        entry[1] = first;
        entry[2] = end;
    }
    return 1;
}

/* Read requests from fd into buf (size bytes) and answer the registered READDIRPLUS ones here. Returns the
 * length of the first other request (left in buf for Python), 0 when the session ended (unmounted or
 * exited), -errno when reading failed (-EINTR: a signal), or SGFS_PAGES_DRAIN when the log is full. */
int64_t sgfs_pages_receive(struct sgfs_pages *pages, int fd, uint8_t *buf, size_t size) {
    for (;;) {
        if (pages->log_length >= pages->log_capacity)
            return SGFS_PAGES_DRAIN;
        if (pages->exited != NULL && pages->exited(pages->session))
            return 0;
        ssize_t length = read(fd, buf, size);
        if (length < 0) {
            if (errno == ENOENT) /* the request was interrupted before we read it: read the next */
                continue;
            if (errno == ENODEV) /* unmounted */
                return 0;
            return -(int64_t)errno;
        }
        if ((size_t)length < IN_HEADER)
            return -EIO;
        if (!serve(pages, fd, buf, (size_t)length))
            return (int64_t)length;
    }
}

/* The log: its entries, and taking them (Python has counted them). */
const int64_t *sgfs_pages_log(const struct sgfs_pages *pages) { return pages->log; }
int64_t sgfs_pages_log_length(const struct sgfs_pages *pages) { return pages->log_length; }
void sgfs_pages_log_clear(struct sgfs_pages *pages) { pages->log_length = 0; }
uint64_t sgfs_pages_served(const struct sgfs_pages *pages) { return pages->served; }
uint64_t sgfs_pages_write_errors(const struct sgfs_pages *pages) { return pages->write_errors; }
uint64_t sgfs_pages_registered(const struct sgfs_pages *pages) { return pages->used; }
