/* bench/bench_db.c — how fast results.db takes decisions: rows a second inserted in one transaction through the
 * prepared statements (db_decisions, as `fusecheck check` logs a report; target: at least 200,000), median of several
 * rounds (the filling of the rows array is timed too). */
#include "db/db.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

/* Seconds on the monotonic clock. */
static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Ascending doubles, for qsort. */
static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(void)
{
    char path[128], err[DB_ERR_LEN];
    snprintf(path, sizeof path, "/tmp/fusecheck-bench-db-%ld.db", (long)getpid());
    struct db *db;
    if (db_open(path, &db, err)) {
        fprintf(stderr, "%s\n", err);
        return 2;
    }
    const struct db_run_info info = {"bench", "bench_db", NULL, NULL, "bench"};
    int64_t run, graph, shim, report;
    db_run_begin(db, &info, &run, err);
    db_begin(db, err);
    db_graph(db, "g", "f", "decode", 1, "s", &graph, err);
    db_shim(db, "reference", "", &shim, err);
    db_commit(db, err);
    struct db_report r = {run, graph, shim, "d", 0, 0, 0, 0, NULL};
    enum { ROWS = 200000, ROUNDS = 5 };
    double rates[ROUNDS];
    struct db_decision *rows = malloc(sizeof *rows * ROWS);
    if (!rows)
        return 2;
    for (int k = 0; k < ROUNDS; k++) {
        double t0 = now();
        db_begin(db, err);
        db_report(db, &r, &report, err);
        for (int i = 0; i < ROWS; i++)
            rows[i] = (struct db_decision){report, i, "add_norm", "add_norm", "[12, 13]", i % 3 ? "fired" : "refused",
                                           i % 3 ? NULL : "the chip runs `add_norm` as its parts"};
        if (db_decisions(db, rows, ROWS, err)) {
            fprintf(stderr, "%s\n", err);
            return 1;
        }
        db_commit(db, err);
        rates[k] = ROWS / (now() - t0);
    }
    qsort(rates, ROUNDS, sizeof rates[0], cmp_double);
    printf("db: decisions inserted: median %.0f rows/s over %d rounds of %d (min %.0f, max %.0f); target >= 200000\n",
           rates[ROUNDS / 2], ROUNDS, ROWS, rates[0], rates[ROUNDS - 1]);
    free(rows);
    db_close(db);
    remove(path);
    char side[160];
    snprintf(side, sizeof side, "%s-wal", path);
    remove(side);
    snprintf(side, sizeof side, "%s-shm", path);
    remove(side);
    return 0;
}
