/* oracle/replay.c — counterexamples as graphs that replay. */
#include "internal.h"

#include <stdio.h>

int oracle_replay_graph(const struct rules_rule *rule, const char *atom, const struct oracle_sched *cex,
                        const char *fixtures, char **text, char err[IR_ERR_LEN])
{
    (void)rule; (void)atom; (void)cex; (void)fixtures;
    *text = NULL;
    snprintf(err, IR_ERR_LEN, "not yet");
    return 1;
}

int oracle_replay_diff(const struct ir_graph *g, const char *shim, const char *rule_atom, const char *rule,
                       bool *differs, int *fired, char err[IR_ERR_LEN])
{
    (void)g; (void)shim; (void)rule_atom; (void)rule;
    *differs = false;
    *fired = 0;
    snprintf(err, IR_ERR_LEN, "not yet");
    return 1;
}
