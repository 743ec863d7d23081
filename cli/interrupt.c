/* cli/interrupt.c — stopping a long command on SIGINT or SIGTERM: the handler notes the first signal and nothing
 * more (a volatile sig_atomic_t, no other work: nothing it could call is unsafe in a handler), the command polls it
 * between units of work, marks its run interrupted and exits 128 + the signal. A second signal restores the default
 * actions and raises itself again: the process ends at once, its committed transactions whole. */
#include "cli.h"

#include <signal.h>
#include <string.h>

/* The first signal caught, or 0. */
static volatile sig_atomic_t caught;

/* The default action, set up before any handler runs (the handler only passes it on). */
static struct sigaction default_action;

/* Note the first signal; on a second, end the process as the signal would have. */
static void on_signal(int sig)
{
    if (caught) {
        sigaction(SIGINT, &default_action, NULL);
        sigaction(SIGTERM, &default_action, NULL);
        raise(sig); /* delivered once the handler returns (sa_mask holds it until then) */
        return;
    }
    caught = sig;
}

void cli_interrupt_catch(void)
{
    memset(&default_action, 0, sizeof default_action);
    default_action.sa_handler = SIG_DFL;
    sigemptyset(&default_action.sa_mask);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaddset(&sa.sa_mask, SIGINT);
    sigaddset(&sa.sa_mask, SIGTERM);
    sa.sa_flags = SA_RESTART; /* a read or a wait the signal lands in goes on: the poll is what stops the work */
    static const int signals[] = {SIGINT, SIGTERM};
    for (int i = 0; i < 2; i++) {
        struct sigaction old;
        /* a signal ignored on entry stays ignored, as a shell leaves it (a background job's SIGINT, nohup) */
        if (sigaction(signals[i], NULL, &old) == 0 && old.sa_handler != SIG_IGN)
            sigaction(signals[i], &sa, NULL);
    }
    ir_eval_set_stop(cli_stop_requested); /* seeding and evaluating a real-size graph stop within a moment too */
}

int cli_interrupted(void) { return (int)caught; }

bool cli_stop_requested(void) { return caught != 0; }

int cli_interrupt_exit(void) { return 128 + (int)caught; }

void cli_interrupt_say(const char *cmd, const char *db, long long run)
{
    const char *name = caught == SIGINT ? "SIGINT" : caught == SIGTERM ? "SIGTERM" : "a signal";
    if (run > 0)
        fprintf(stderr, "fusecheck: %s: interrupted (%s): stopped before its work was done; run %lld marked "
                        "interrupted in %s, what it committed kept whole\n",
                cmd, name, run, db);
    else
        fprintf(stderr, "fusecheck: %s: interrupted (%s): stopped before its work was done\n", cmd, name);
}
