/* fuzz/fuzz_db.c — libFuzzer target: runs, graphs, shims, decisions and findings with arbitrary text round-trip
 * through results.db unchanged (a scratch file, removed at exit). */
#include "fuzz.h"

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* SQLite's page cache lives in one buffer, not a malloc per page: under ASan and libFuzzer's malloc hooks each of
 * those costs more than the statement it serves. */
#define PAGE_SLOTS 512
#define PAGE_SLOT_BYTES (4096 + 512)
static uint64_t page_cache[PAGE_SLOTS * PAGE_SLOT_BYTES / sizeof(uint64_t)];

/* Remove the scratch db when the process ends. */
static void cleanup(void) { fuzz_db_cleanup(); }

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    fuzz_harness_init("fuzz_db");
    sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
    sqlite3_config(SQLITE_CONFIG_PAGECACHE, page_cache, PAGE_SLOT_BYTES, PAGE_SLOTS);
    atexit(cleanup);
    return 0;
}

/* The db check, its scratch file removed when it fails (a crash skips atexit). */
static int check_db(const uint8_t *data, size_t size, struct fuzz_finding *f)
{
    int bad = fuzz_check_db(data, size, f);
    if (bad)
        fuzz_db_cleanup();
    return bad;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) { return fuzz_harness_run("fuzz_db", check_db, data, size); }
