/* db/run_config.c — a run's configuration: its command line without what changes nothing it finds, so that two
 * nights of one job read as one configuration (the views previous_runs, latest_pairs, latest_check_pair). */
#include "db.h"

#include <stdlib.h>
#include <string.h>

/* Options dropped with their value: where the results go. */
static const char *const dropped_with_value[] = {"--db"};
/* Options dropped alone: how the run shows itself. */
static const char *const dropped_alone[] = {"--progress", "--no-progress", "--json"};

/* Whether word w (n bytes) is one of the names in list. */
static bool word_in(const char *w, size_t n, const char *const *list, size_t count)
{
    for (size_t i = 0; i < count; i++)
        if (strlen(list[i]) == n && memcmp(list[i], w, n) == 0)
            return true;
    return false;
}

/* Whether word w (n bytes) is `--db=FILE` or the like: an option dropped with its value joined to it. */
static bool joined_value(const char *w, size_t n)
{
    for (size_t i = 0; i < sizeof dropped_with_value / sizeof *dropped_with_value; i++) {
        size_t k = strlen(dropped_with_value[i]);
        if (n > k && memcmp(w, dropped_with_value[i], k) == 0 && w[k] == '=')
            return true;
    }
    return false;
}

char *db_run_config(const char *command)
{
    size_t len = command ? strlen(command) : 0;
    char *out = malloc(len + 1);
    if (!out)
        abort();
    size_t k = 0;
    bool first = true, skip_next = false;
    for (const char *p = command ? command : ""; *p;) {
        while (*p == ' ')
            p++;
        size_t n = strcspn(p, " ");
        if (n == 0)
            break;
        bool takes_value = !first && !skip_next &&
                           word_in(p, n, dropped_with_value, sizeof dropped_with_value / sizeof *dropped_with_value);
        bool keep = !first && !skip_next && !takes_value && !joined_value(p, n) &&
                    !word_in(p, n, dropped_alone, sizeof dropped_alone / sizeof *dropped_alone);
        skip_next = takes_value;
        first = false;
        if (keep) {
            if (k)
                out[k++] = ' ';
            memcpy(out + k, p, n);
            k += n;
        }
        p += n;
    }
    out[k] = '\0';
    return out;
}
