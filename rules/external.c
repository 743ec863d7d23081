/* rules/external.c — an optimizer as its own process: the client that starts one and speaks the protocol
 * (docs/optimizer-protocol.md) to it over its stdin and stdout, and the server that answers it with fusecheck's own
 * optimizer (`fusecheck optimize --serve`).
 *
 * Every message is a header line "fusecheck-optimizer/1 <kind> <id> <nbytes>\n" and exactly nbytes of body. The
 * client never blocks: its ends of the pipes are non-blocking and every wait is a poll against the answer's
 * deadline, draining the process's stderr into a bounded tail all the while. SIGPIPE from a write to a process that
 * closed its stdin is blocked around the write and, when the write raised it, consumed (sigtimedwait), so neither
 * the caller's disposition nor its other threads see it. */
#define _GNU_SOURCE /* pipe2 (close-on-exec pipes); SYS_close_range for the child's other descriptors */
#include "rules.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* The protocol's name and version, as every header starts. */
#define PROTO_PREFIX "fusecheck-optimizer/"
#define PROTO_VERSION "1"
/* The longest header line, its newline included. */
#define HEADER_MAX 96
/* The longest greeting name or version. */
#define LABEL_MAX 64
/* The most held steps one request names. */
#define HOLDS_MAX 64
/* The largest request the server reads. */
#define SERVE_REQUEST_MAX ((size_t)1 << 30)
/* The defaults of struct rules_external_limits. */
#define DEFAULT_TIMEOUT_MS 10000
#define DEFAULT_MAX_ANSWER ((size_t)256 << 20)
#define DEFAULT_KEEP_STDERR ((size_t)64 << 10)
/* The most stderr kept, whatever the caller asks. */
#define KEEP_STDERR_MAX ((size_t)64 << 20)
/* How long a stop waits for the process to exit by itself once its stdin is closed, and for its stderr's last bytes
 * once it is killed. */
#define STOP_GRACE_MS 1000
#define DRAIN_GRACE_MS 200
/* The most bytes one read takes. */
#define CHUNK ((size_t)64 << 10)

/* ── Faults and message kinds ────────────────────────────────────────────────────────────────────────────── */

static const char *const fault_names[] = {
#define X(e, name, meaning) name,
    RULES_EXTERNAL_FAULTS(X)
#undef X
};
static const char *const fault_meanings[] = {
#define X(e, name, meaning) meaning,
    RULES_EXTERNAL_FAULTS(X)
#undef X
};

const char *rules_external_fault_name(enum rules_external_fault f)
{
    return (unsigned)f < RULES_EXTERNAL_FAULT_COUNT ? fault_names[f] : "?";
}

const char *rules_external_fault_meaning(enum rules_external_fault f)
{
    return (unsigned)f < RULES_EXTERNAL_FAULT_COUNT ? fault_meanings[f] : "?";
}

/* The messages: the optimizer's greeting, fusecheck's request, the optimizer's answer or its refusal. */
#define MESSAGE_KINDS(X) X(HELLO, "hello") X(REQUEST, "request") X(ANSWER, "answer") X(ERROR, "error")
enum kind {
#define X(e, s) KIND_##e,
    MESSAGE_KINDS(X)
#undef X
    KIND_COUNT
};
static const char *const kind_names[] = {
#define X(e, s) s,
    MESSAGE_KINDS(X)
#undef X
};

/* One message: its kind, id and body (NUL-terminated, n bytes before the NUL). */
struct message {
    enum kind kind;
    uint64_t id;
    char *body;
    size_t n;
};

/* A header, parsed. */
struct header {
    enum kind kind;
    uint64_t id;
    uint64_t nbytes;
};

/* Write err printf-style; returns fault f. */
__attribute__((format(printf, 3, 4))) static enum rules_external_fault fail(enum rules_external_fault f,
                                                                            char err[IR_ERR_LEN], const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, IR_ERR_LEN, fmt, ap);
    va_end(ap);
    return f;
}

/* A decimal as the protocol writes it (no sign, no leading zero, at most 19 digits) from [s, end) up to `stop`;
 * the byte after it in *next. 0, or -1. */
static int read_decimal(const char *s, const char *end, char stop, uint64_t *out, const char **next)
{
    const char *q = s;
    uint64_t v = 0;
    for (; q < end && *q >= '0' && *q <= '9' && q - s < 19; q++)
        v = v * 10 + (uint64_t)(*q - '0');
    if (q == s || q >= end || *q != stop || (*s == '0' && q - s > 1))
        return -1;
    *out = v;
    *next = q + 1;
    return 0;
}

/* Parse the header line [s, s+n) (its newline included). 0, or -1 with what was expected in err. */
static int parse_header(const char *s, size_t n, struct header *h, char err[IR_ERR_LEN])
{
    const char *end = s + n, *p = s + sizeof PROTO_PREFIX - 1;
    if (n < sizeof PROTO_PREFIX || memcmp(s, PROTO_PREFIX, sizeof PROTO_PREFIX - 1) != 0) {
        snprintf(err, IR_ERR_LEN, "expected a header '" PROTO_PREFIX PROTO_VERSION " <kind> <id> <nbytes>'");
        return -1;
    }
    const char *sp = memchr(p, ' ', (size_t)(end - p));
    if (!sp || (size_t)(sp - p) != sizeof PROTO_VERSION - 1 || memcmp(p, PROTO_VERSION, sp - p) != 0) {
        snprintf(err, IR_ERR_LEN, "protocol version '%.*s', where fusecheck speaks " PROTO_VERSION,
                 sp ? (int)(sp - p) : 0, p);
        return -1;
    }
    p = sp + 1;
    sp = memchr(p, ' ', (size_t)(end - p));
    h->kind = KIND_COUNT;
    for (int k = 0; sp && k < KIND_COUNT; k++)
        if (strlen(kind_names[k]) == (size_t)(sp - p) && memcmp(kind_names[k], p, sp - p) == 0)
            h->kind = (enum kind)k;
    if (h->kind == KIND_COUNT) {
        snprintf(err, IR_ERR_LEN, "expected a message kind (hello, request, answer, error) after the version");
        return -1;
    }
    p = sp + 1;
    if (read_decimal(p, end, ' ', &h->id, &p) || read_decimal(p, end, '\n', &h->nbytes, &p) || p != end) {
        snprintf(err, IR_ERR_LEN, "expected '<id> <nbytes>\\n' as decimals after the kind");
        return -1;
    }
    return 0;
}

/* The header of a message of kind with id and n bytes of body, into h (room for HEADER_MAX); its length. */
static size_t format_header(char *h, enum kind kind, uint64_t id, size_t n)
{
    return (size_t)snprintf(h, HEADER_MAX, PROTO_PREFIX PROTO_VERSION " %s %" PRIu64 " %zu\n", kind_names[kind], id,
                            n);
}

/* ── Writing without SIGPIPE ─────────────────────────────────────────────────────────────────────────────── */

/* write(2) with SIGPIPE blocked in this thread; a SIGPIPE the write raised is consumed, one already pending is
 * left. errno as the write left it. */
static ssize_t write_quiet(int fd, const void *buf, size_t n)
{
    sigset_t pipe_set, old, pending;
    sigemptyset(&pipe_set);
    sigaddset(&pipe_set, SIGPIPE);
    sigemptyset(&pending);
    sigpending(&pending);
    bool was_pending = sigismember(&pending, SIGPIPE) == 1;
    pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
    ssize_t w = write(fd, buf, n);
    int e = errno;
    if (w < 0 && e == EPIPE && !was_pending) {
        const struct timespec zero = {0, 0};
        while (sigtimedwait(&pipe_set, NULL, &zero) < 0 && errno == EINTR) {
        }
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    errno = e;
    return w;
}

/* Write all n bytes to a blocking fd. 0, or -1 (errno). */
static int write_all(int fd, const char *buf, size_t n)
{
    while (n) {
        ssize_t w = write_quiet(fd, buf, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        buf += w;
        n -= (size_t)w;
    }
    return 0;
}

/* ── The client ──────────────────────────────────────────────────────────────────────────────────────────── */

struct rules_external {
    char *command;
    struct rules_external_limits lim;
    pid_t pid;           /* 0: not running (started again at the next request) */
    int to, from, err;   /* its stdin (written), stdout and stderr (read); -1 when closed */
    char name[LABEL_MAX + 1], version[LABEL_MAX + 1];
    uint64_t next_id;
    char *tail;          /* its stderr's last bytes, NUL-terminated: keep_stderr + 1 bytes */
    size_t ntail;
    char *in;            /* bytes read from its stdout and not yet taken by a message */
    size_t nin, incap;
};

/* Milliseconds on the monotonic clock. */
static int64_t now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* Keep the last keep_stderr bytes of what the process wrote on its stderr: append n bytes to the tail. */
static void tail_add(struct rules_external *x, const char *s, size_t n)
{
    size_t cap = x->lim.keep_stderr;
    if (n >= cap) {
        memcpy(x->tail, s + n - cap, cap);
        x->ntail = cap;
    } else {
        if (x->ntail + n > cap) {
            size_t drop = x->ntail + n - cap;
            memmove(x->tail, x->tail + drop, x->ntail - drop);
            x->ntail -= drop;
        }
        memcpy(x->tail + x->ntail, s, n);
        x->ntail += n;
    }
    x->tail[x->ntail] = '\0';
}

/* Read what its stderr holds now (one read); close it at its end. */
static void drain_stderr(struct rules_external *x)
{
    char buf[CHUNK];
    ssize_t r = read(x->err, buf, sizeof buf);
    if (r > 0) {
        /* NULs would end the kept text early: shown as '?' */
        for (ssize_t i = 0; i < r; i++)
            if (buf[i] == '\0')
                buf[i] = '?';
        tail_add(x, buf, (size_t)r);
    } else if (r == 0 || (errno != EAGAIN && errno != EINTR)) {
        close(x->err);
        x->err = -1;
    }
}

/* Close fd if open and mark it closed. */
static void close_fd(int *fd)
{
    if (*fd >= 0)
        close(*fd);
    *fd = -1;
}

/* Whether the process has exited (not reaped: its pid, and so its group's id, stays its own until waitpid). */
static bool exited(pid_t pid)
{
    siginfo_t si;
    memset(&si, 0, sizeof si);
    return waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT) == 0 && si.si_pid == pid;
}

/* End the process: gently (stdin closed, up to STOP_GRACE_MS to exit) or not; then SIGKILL to its whole group
 * (before the reap, so the group's id cannot have been reused), the reap, the last of its stderr, every fd closed.
 * *status receives its wait status (may be NULL). */
static void end_process(struct rules_external *x, bool gently, int *status)
{
    if (!x->pid)
        return;
    close_fd(&x->to);
    if (gently)
        for (int64_t until = now_ms() + STOP_GRACE_MS; !exited(x->pid) && now_ms() < until;) {
            struct pollfd p = {x->err, POLLIN, 0};
            if (x->err >= 0 && poll(&p, 1, 10) > 0)
                drain_stderr(x);
            else if (x->err < 0)
                poll(NULL, 0, 10);
        }
    kill(-x->pid, SIGKILL);
    kill(x->pid, SIGKILL); /* should it not have made its group yet */
    int st = 0;
    while (waitpid(x->pid, &st, 0) < 0 && errno == EINTR) {
    }
    if (status)
        *status = st;
    for (int64_t until = now_ms() + DRAIN_GRACE_MS; x->err >= 0 && now_ms() < until;) {
        struct pollfd p = {x->err, POLLIN, 0};
        if (poll(&p, 1, (int)(until - now_ms() > 0 ? until - now_ms() : 0)) > 0)
            drain_stderr(x);
    }
    close_fd(&x->err);
    close_fd(&x->from);
    x->pid = 0;
    x->nin = 0;
}

/* Make fd the child's target descriptor, close-on-exec cleared (dup2 onto itself would keep it). */
static void child_fd(int fd, int target)
{
    if (fd == target)
        fcntl(fd, F_SETFD, 0);
    else
        dup2(fd, target);
}

/* Spawn /bin/sh -c command in its own process group, its stdin, stdout and stderr ours to speak and read.
 * RULES_EXTERNAL_NONE, or START with err. */
static enum rules_external_fault spawn(struct rules_external *x, char err[IR_ERR_LEN])
{
    int in[2] = {-1, -1}, out[2] = {-1, -1}, er[2] = {-1, -1};
    if (pipe2(in, O_CLOEXEC) || pipe2(out, O_CLOEXEC) || pipe2(er, O_CLOEXEC)) {
        int e = errno;
        int *fds[] = {in, out, er};
        for (int i = 0; i < 3; i++) {
            close_fd(&fds[i][0]);
            close_fd(&fds[i][1]);
        }
        return fail(RULES_EXTERNAL_START, err, "cannot make its pipes: %s", strerror(e));
    }
    long open_max = sysconf(_SC_OPEN_MAX);
    int maxfd = open_max > 0 && open_max < 65536 ? (int)open_max : 65536;
    sigset_t none;
    sigemptyset(&none);
    pid_t pid = fork();
    if (pid == 0) {
        /* The child: only async-signal-safe calls from here to exec. */
        setpgid(0, 0);
        child_fd(in[0], 0);
        child_fd(out[1], 1);
        child_fd(er[1], 2);
#ifdef SYS_close_range
        if (syscall(SYS_close_range, 3u, ~0u, 0u) != 0)
#endif
            for (int fd = 3; fd < maxfd; fd++)
                close(fd);
        signal(SIGPIPE, SIG_DFL);
        sigprocmask(SIG_SETMASK, &none, NULL);
        execl("/bin/sh", "sh", "-c", x->command, (char *)NULL);
        _exit(127);
    }
    int e = errno;
    close(in[0]);
    close(out[1]);
    close(er[1]);
    if (pid < 0) {
        close(in[1]);
        close(out[0]);
        close(er[0]);
        return fail(RULES_EXTERNAL_START, err, "cannot fork: %s", strerror(e));
    }
    setpgid(pid, pid); /* also here: whichever runs first, the group exists before any kill */
    x->pid = pid;
    x->to = in[1];
    x->from = out[0];
    x->err = er[0];
    x->nin = 0;
    int fds[] = {x->to, x->from, x->err};
    for (int i = 0; i < 3; i++)
        fcntl(fds[i], F_SETFL, fcntl(fds[i], F_GETFL) | O_NONBLOCK);
    return RULES_EXTERNAL_NONE;
}

/* Room for n more bytes in x->in. */
static void in_reserve(struct rules_external *x, size_t n)
{
    if (x->nin + n + 1 <= x->incap)
        return;
    size_t cap = x->incap ? x->incap : CHUNK;
    while (cap < x->nin + n + 1)
        cap *= 2;
    x->in = realloc(x->in, cap);
    if (!x->in)
        abort();
    x->incap = cap;
}

/* What the bytes read so far hold: MORE (no whole message yet), DONE (a message, taken into *m), or a fault. */
enum scan { SCAN_MORE = -1 };

/* Look at x->in for a whole message (its header checked as its bytes come, so garbage is seen at once). */
static int scan(struct rules_external *x, struct message *m, bool greeting, char err[IR_ERR_LEN])
{
    enum rules_external_fault bad = greeting ? RULES_EXTERNAL_HANDSHAKE : RULES_EXTERNAL_FRAMING;
    size_t k = x->nin < sizeof PROTO_PREFIX - 1 ? x->nin : sizeof PROTO_PREFIX - 1;
    if (memcmp(x->in, PROTO_PREFIX, k) != 0)
        return fail(bad, err, "its output does not start with '" PROTO_PREFIX "': '%.*s'", (int)(k < 40 ? k : 40),
                    x->in);
    const char *nl = memchr(x->in, '\n', x->nin < HEADER_MAX ? x->nin : HEADER_MAX);
    if (!nl)
        return x->nin >= HEADER_MAX ? (int)fail(bad, err, "a header line longer than %d bytes", HEADER_MAX) : SCAN_MORE;
    struct header h;
    char why[IR_ERR_LEN];
    size_t hn = (size_t)(nl + 1 - x->in);
    if (parse_header(x->in, hn, &h, why))
        return fail(bad, err, "header '%.*s': %.300s", (int)hn - 1, x->in, why);
    if (h.nbytes > x->lim.max_answer)
        return fail(RULES_EXTERNAL_TOO_LARGE, err, "a '%s' message of %" PRIu64 " bytes, over the limit of %zu",
                    kind_names[h.kind], h.nbytes, x->lim.max_answer);
    if (x->nin - hn < h.nbytes)
        return SCAN_MORE;
    m->kind = h.kind;
    m->id = h.id;
    m->n = (size_t)h.nbytes;
    m->body = rules_xmalloc(m->n + 1);
    memcpy(m->body, x->in + hn, m->n);
    m->body[m->n] = '\0';
    memmove(x->in, x->in + hn + m->n, x->nin - hn - m->n);
    x->nin -= hn + m->n;
    return RULES_EXTERNAL_NONE;
}

/* Write `out` (n bytes) to the process while reading one message back, within timeout_ms, its stderr drained
 * throughout. RULES_EXTERNAL_NONE with *m, or a fault with err. */
static enum rules_external_fault exchange(struct rules_external *x, const char *out, size_t n, struct message *m,
                                          bool greeting, char err[IR_ERR_LEN])
{
    int64_t deadline = now_ms() + x->lim.timeout_ms;
    memset(m, 0, sizeof *m);
    for (;;) {
        if (x->nin) {
            int s = scan(x, m, greeting, err);
            if (s != SCAN_MORE)
                return (enum rules_external_fault)s;
        }
        int64_t left = deadline - now_ms();
        if (left <= 0)
            return fail(RULES_EXTERNAL_TIMEOUT, err, "no whole %s within %d ms (%s)",
                        greeting ? "greeting" : "answer", (int)x->lim.timeout_ms,
                        n ? "its stdin still not read whole" : x->nin ? "part of a message read" : "nothing read");
        struct pollfd p[3] = {{x->from, POLLIN, 0}, {x->err, POLLIN, 0}, {n ? x->to : -1, POLLOUT, 0}};
        if (poll(p, 3, (int)(left < 1000 ? left : 1000)) < 0 && errno != EINTR)
            return fail(RULES_EXTERNAL_EXIT, err, "poll: %s", strerror(errno));
        if (p[1].revents)
            drain_stderr(x);
        if (p[2].revents) {
            ssize_t w = write_quiet(x->to, out, n < CHUNK ? n : CHUNK);
            if (w > 0) {
                out += w;
                n -= (size_t)w;
            } else if (w < 0 && errno != EAGAIN && errno != EINTR) {
                return fail(RULES_EXTERNAL_EXIT, err, "it closed its stdin before the whole request (%s)",
                            strerror(errno));
            }
        }
        if (p[0].revents) {
            in_reserve(x, CHUNK);
            ssize_t r = read(x->from, x->in + x->nin, CHUNK);
            if (r > 0)
                x->nin += (size_t)r;
            else if (r == 0)
                return fail(RULES_EXTERNAL_EXIT, err, "it %s its stdout before a whole %s (%zu bytes of it read)",
                            exited(x->pid) ? "exited and closed" : "closed", greeting ? "greeting" : "answer",
                            x->nin);
            else if (errno != EAGAIN && errno != EINTR)
                return fail(RULES_EXTERNAL_EXIT, err, "reading its stdout: %s", strerror(errno));
        }
    }
}

/* Copy a label of the greeting ("<key> <text>" line) into out: printable, at most LABEL_MAX bytes. 0, or -1. */
static int greeting_label(const char *body, const char *key, char out[LABEL_MAX + 1])
{
    size_t k = strlen(key);
    for (const char *line = body; line && *line; line = strchr(line, '\n'), line = line ? line + 1 : NULL) {
        const char *end = strchr(line, '\n');
        size_t n = end ? (size_t)(end - line) : strlen(line);
        if (n > k + 1 && memcmp(line, key, k) == 0 && line[k] == ' ') {
            if (n - k - 1 > LABEL_MAX)
                return -1;
            for (size_t i = k + 1; i < n; i++)
                if ((unsigned char)line[i] < 0x20 || line[i] == 0x7f)
                    return -1;
            memcpy(out, line + k + 1, n - k - 1);
            out[n - k - 1] = '\0';
            return 0;
        }
    }
    return -1;
}

/* Start the process and read its greeting. RULES_EXTERNAL_NONE, or the fault with err (the process ended). */
static enum rules_external_fault launch(struct rules_external *x, char err[IR_ERR_LEN])
{
    enum rules_external_fault f = spawn(x, err);
    if (f)
        return f;
    struct message m;
    f = exchange(x, NULL, 0, &m, true, err);
    if (!f && (m.kind != KIND_HELLO || m.id != 0))
        f = fail(RULES_EXTERNAL_HANDSHAKE, err, "its first message is a '%s' with id %" PRIu64 ", not a hello with id 0",
                 kind_names[m.kind], m.id);
    if (!f && (greeting_label(m.body, "name", x->name) || greeting_label(m.body, "version", x->version)))
        f = fail(RULES_EXTERNAL_HANDSHAKE, err, "its greeting does not give 'name <text>' and 'version <text>' lines "
                 "(printable, at most %d bytes each)", LABEL_MAX);
    free(m.body);
    if (f) {
        int status = 0;
        end_process(x, false, &status);
        /* the shell's 127: the command was not found or could not be run */
        if (f == RULES_EXTERNAL_EXIT && WIFEXITED(status) && WEXITSTATUS(status) == 127)
            f = fail(RULES_EXTERNAL_START, err, "/bin/sh could not run it (exit 127)");
    }
    x->next_id = 1;
    return f;
}

struct rules_external *rules_external_start(const char *command, const struct rules_external_limits *lim,
                                            enum rules_external_fault *fault, char err[IR_ERR_LEN])
{
    struct rules_external *x = calloc(1, sizeof *x);
    if (!x)
        abort();
    x->command = strdup(command ? command : "");
    if (lim)
        x->lim = *lim;
    if (x->lim.timeout_ms <= 0)
        x->lim.timeout_ms = DEFAULT_TIMEOUT_MS;
    if (!x->lim.max_answer)
        x->lim.max_answer = DEFAULT_MAX_ANSWER;
    if (!x->lim.keep_stderr)
        x->lim.keep_stderr = DEFAULT_KEEP_STDERR;
    if (x->lim.keep_stderr > KEEP_STDERR_MAX)
        x->lim.keep_stderr = KEEP_STDERR_MAX;
    x->tail = rules_xmalloc(x->lim.keep_stderr + 1);
    x->tail[0] = '\0';
    x->to = x->from = x->err = -1;
    err[0] = '\0';
    *fault = x->command ? launch(x, err) : fail(RULES_EXTERNAL_START, err, "out of memory");
    if (*fault) {
        rules_external_stop(x);
        return NULL;
    }
    return x;
}

const char *rules_external_command(const struct rules_external *x) { return x->command; }
const char *rules_external_name(const struct rules_external *x) { return x->name; }
const char *rules_external_version(const struct rules_external *x) { return x->version; }
const char *rules_external_stderr(const struct rules_external *x) { return x->tail; }

void rules_external_stop(struct rules_external *x)
{
    if (!x)
        return;
    end_process(x, true, NULL);
    free(x->command);
    free(x->tail);
    free(x->in);
    free(x);
}

/* Whether a name can go on a request's line: printable, no space at its ends, not empty. */
static bool sendable(const char *s)
{
    if (!s || !*s || s[0] == ' ' || s[strlen(s) - 1] == ' ')
        return false;
    for (; *s; s++)
        if ((unsigned char)*s < 0x20 || *s == 0x7f)
            return false;
    return true;
}

/* The request's message (header and body) for g, malloc'd into *out (its length *n). 0, or -1 with err when g does
 * not print. */
static int build_request(uint64_t id, const struct ir_graph *g, const char *shim, const char *const *held, int nheld,
                         bool seed_rules, char **out, size_t *n, char err[IR_ERR_LEN])
{
    size_t glen;
    char *text = ir_print(g, &glen);
    if (!text)
        return snprintf(err, IR_ERR_LEN, "the graph does not print"), -1;
    struct ir_text b = {0};
    ir_text_add(&b, "shim %s\n", shim);
    for (int i = 0; i < nheld; i++)
        if (held[i])
            ir_text_add(&b, "hold %s\n", held[i]);
    ir_text_add(&b, "seed-rules %s\n\n", seed_rules ? "yes" : "no");
    size_t head = b.n;
    char h[HEADER_MAX];
    size_t hn = format_header(h, KIND_REQUEST, id, head + glen);
    struct ir_text all = {0};
    ir_text_put(&all, h, hn);
    ir_text_put(&all, b.s, head);
    ir_text_put(&all, text, glen);
    free(text);
    free(ir_text_take(&b));
    *n = all.n;
    *out = ir_text_take(&all);
    return 0;
}

/* Read an answer's body (the report's lines, a blank line, the rewritten graph's text) into *out. 0, or MALFORMED
 * with err. */
static enum rules_external_fault read_answer(const struct message *m, struct rules_optimized *out,
                                             char err[IR_ERR_LEN])
{
    const char *b = m->body, *graph;
    size_t nreport;
    if (m->n && b[0] == '\n') {
        nreport = 0;
        graph = b + 1;
    } else {
        const char *sep = NULL;
        for (const char *q = b; !sep && (q = memchr(q, '\n', m->n - (size_t)(q - b))) && q + 1 < b + m->n; q++)
            if (q[1] == '\n')
                sep = q;
        if (!sep)
            return fail(RULES_EXTERNAL_MALFORMED, err, "an answer without the blank line that ends its report");
        nreport = (size_t)(sep + 1 - b);
        graph = sep + 2;
    }
    char why[IR_ERR_LEN];
    if (rules_report_parse(b, nreport, &out->report, why))
        return fail(RULES_EXTERNAL_MALFORMED, err, "its report: %.400s", why);
    out->graph = ir_parse_unchecked(graph, m->n - (size_t)(graph - b), "answer", why);
    if (!out->graph) {
        rules_report_free(&out->report);
        return fail(RULES_EXTERNAL_MALFORMED, err, "its graph: %.400s", why);
    }
    return RULES_EXTERNAL_NONE;
}

/* A refusal's message as err: its first line, control bytes shown as '?'. */
static void refusal_text(const struct message *m, char err[IR_ERR_LEN])
{
    char line[IR_ERR_LEN - 32];
    size_t n = 0;
    for (size_t i = 0; i < m->n && m->body[i] != '\n' && n + 1 < sizeof line; i++)
        line[n++] = (unsigned char)m->body[i] < 0x20 || m->body[i] == 0x7f ? '?' : m->body[i];
    line[n] = '\0';
    snprintf(err, IR_ERR_LEN, "it refused: %s", n ? line : "(no message)");
}

/* One request's exchange and its answer read; the process as it was (the caller ends it on a fault). */
static enum rules_external_fault ask(struct rules_external *x, const struct ir_graph *g, const char *shim,
                                     const char *const *held, int nheld, bool seed_rules,
                                     struct rules_optimized *out, char err[IR_ERR_LEN])
{
    char *req;
    size_t n;
    uint64_t id = x->next_id++;
    if (build_request(id, g, shim, held, nheld, seed_rules, &req, &n, err))
        return RULES_EXTERNAL_REFUSED;
    struct message m;
    enum rules_external_fault f = exchange(x, req, n, &m, false, err);
    free(req);
    if (f)
        return f;
    if (m.kind != KIND_ANSWER && m.kind != KIND_ERROR)
        f = fail(RULES_EXTERNAL_FRAMING, err, "a '%s' message where an answer belongs", kind_names[m.kind]);
    else if (m.id != id)
        f = fail(RULES_EXTERNAL_WRONG_ID, err, "an %s with id %" PRIu64 " to request %" PRIu64, kind_names[m.kind],
                 m.id, id);
    else if (m.kind == KIND_ERROR)
        f = (refusal_text(&m, err), RULES_EXTERNAL_REFUSED);
    else
        f = read_answer(&m, out, err);
    free(m.body);
    return f;
}

enum rules_external_fault rules_external_optimize(struct rules_external *x, const struct ir_graph *g, const char *shim,
                                                  const char *const *held, int nheld, bool seed_rules,
                                                  struct rules_optimized *out, char err[IR_ERR_LEN])
{
    memset(out, 0, sizeof *out);
    err[0] = '\0';
    if (!sendable(shim))
        return fail(RULES_EXTERNAL_REFUSED, err, "a shim name must be printable text");
    for (int i = 0; i < nheld; i++)
        if (held[i] && !sendable(held[i]))
            return fail(RULES_EXTERNAL_REFUSED, err, "a held step's name must be printable text");
    enum rules_external_fault f = x->pid ? RULES_EXTERNAL_NONE : launch(x, err);
    if (!f)
        f = ask(x, g, shim, held, nheld, seed_rules, out, err);
    if (f && f != RULES_EXTERNAL_REFUSED)
        end_process(x, false, NULL);
    return f;
}

/* ── The server ──────────────────────────────────────────────────────────────────────────────────────────── */

/* A buffered reader of the client's messages. */
struct reader {
    int fd;
    char buf[CHUNK];
    size_t pos, n;
    bool eof;
};

/* Fill the reader's buffer when it is empty. 0, or -1 at the input's end or an error. */
static int reader_fill(struct reader *r)
{
    if (r->pos < r->n)
        return 0;
    for (;;) {
        ssize_t k = read(r->fd, r->buf, sizeof r->buf);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0) {
            r->eof = true;
            return -1;
        }
        r->pos = 0;
        r->n = (size_t)k;
        return 0;
    }
}

/* Read n bytes into out. 0, or -1 when the input ends first. */
static int reader_take(struct reader *r, char *out, size_t n)
{
    while (n) {
        if (reader_fill(r))
            return -1;
        size_t k = r->n - r->pos < n ? r->n - r->pos : n;
        memcpy(out, r->buf + r->pos, k);
        r->pos += k;
        out += k;
        n -= k;
    }
    return 0;
}

/* Write one message. 0, or -1 with err. */
static int send_message(int fd, enum kind kind, uint64_t id, const char *body, size_t n, char err[IR_ERR_LEN])
{
    char h[HEADER_MAX];
    size_t hn = format_header(h, kind, id, n);
    /* header and body in one write where the body is small: the client wakes once for the message */
    char *one = n <= CHUNK * 64 ? malloc(hn + n) : NULL;
    if (one) {
        memcpy(one, h, hn);
        memcpy(one + hn, body, n);
    }
    int rc = one ? write_all(fd, one, hn + n) : write_all(fd, h, hn) || write_all(fd, body, n);
    free(one);
    if (rc) {
        snprintf(err, IR_ERR_LEN, "writing a message to the client: %s", strerror(errno));
        return -1;
    }
    return 0;
}

/* What a request asks. */
struct request {
    char shim[256];
    char *held[HOLDS_MAX];
    int nheld;
    int seed; /* -1: not said */
    const char *graph;
    size_t ngraph;
};

/* Parse a request's body: its lines "shim", "hold" (repeated), "seed-rules yes|no", a blank line, the graph. 0, or -1
 * with what was expected in err. */
static int parse_request(char *body, size_t n, struct request *q, char err[IR_ERR_LEN])
{
    memset(q, 0, sizeof *q);
    q->seed = -1;
    char *p = body, *end = body + n;
    for (int line = 1;; line++) {
        char *nl = memchr(p, '\n', (size_t)(end - p));
        if (!nl)
            return snprintf(err, IR_ERR_LEN, "request line %d: expected the blank line before the graph", line), -1;
        *nl = '\0';
        if (nl == p)
            break;
        char *sp = strchr(p, ' ');
        const char *v = sp ? sp + 1 : "";
        if (sp)
            *sp = '\0';
        if (strcmp(p, "shim") == 0 && *v && strlen(v) < sizeof q->shim && !q->shim[0]) {
            strcpy(q->shim, v);
        } else if (strcmp(p, "hold") == 0 && *v && q->nheld < HOLDS_MAX) {
            q->held[q->nheld++] = (char *)v;
        } else if (strcmp(p, "seed-rules") == 0 && q->seed < 0 && (!strcmp(v, "yes") || !strcmp(v, "no"))) {
            q->seed = strcmp(v, "yes") == 0;
        } else {
            return snprintf(err, IR_ERR_LEN, "request line %d: expected 'shim <name>' (once), 'hold <step>' (at most "
                            "%d) or 'seed-rules yes|no' (once), got '%.80s'", line, HOLDS_MAX, p), -1;
        }
        p = nl + 1;
    }
    if (!q->shim[0] || q->seed < 0)
        return snprintf(err, IR_ERR_LEN, "a request names its shim and says seed-rules yes or no"), -1;
    q->graph = p + 1; /* past the blank line */
    q->ngraph = (size_t)(end - q->graph);
    return 0;
}

/* Whether step `name` is visited (rules_steps' callback). */
struct seek {
    const char *name;
    bool found;
};
static void seek_step(const char *name, void *ctx)
{
    struct seek *s = ctx;
    s->found = s->found || strcmp(name, s->name) == 0;
}

/* Whether a compile under shim can hold name: a step it runs, or what its hold knob holds (as `--hold` takes). */
static bool holdable(const struct shim *shim, const char *name)
{
    struct seek s = {name, false};
    rules_steps(shim, seek_step, &s);
    for (int i = 0; i < shim->nholdable && !s.found; i++)
        s.found = strcmp(shim->holdable[i], name) == 0;
    return s.found;
}

/* Append a report line and its newline. */
static void add_line(const char *text, void *ctx) { ir_text_add(ctx, "%s\n", text); }

/* Optimize the request's graph as `fusecheck optimize --shim S --hold H` would; the answer's body into *body, or a
 * refusal's message into why. 0 answered, 1 refused. */
static int serve_one(const struct request *q, bool force_seed, struct ir_text *body, char why[IR_ERR_LEN])
{
    char err[IR_ERR_LEN];
    struct ir_graph *g = ir_parse(q->graph, q->ngraph, "request", err);
    if (!g)
        return snprintf(why, IR_ERR_LEN, "the request's graph: %.450s", err), 1;
    struct shim *shim = shim_lookup(q->shim, err);
    if (!shim) {
        ir_graph_free(g);
        return snprintf(why, IR_ERR_LEN, "%.500s", err), 1;
    }
    int rc = 0;
    for (int i = 0; i < q->nheld && !rc; i++)
        if (!holdable(shim, q->held[i]))
            rc = snprintf(why, IR_ERR_LEN, "hold: '%.100s' is no step under %.128s, nor anything it holds",
                          q->held[i], shim->name) > 0;
    for (int i = 0; !rc && shim->hold && i < q->nheld; i++)
        shim->hold(shim, q->held[i]);
    struct rules_optimized o;
    bool before = rules_seed_rules();
    rules_seed_mode(force_seed || q->seed == 1);
    if (!rc && rules_optimize(g, shim, (const char *const *)q->held, q->nheld, &o, err))
        rc = snprintf(why, IR_ERR_LEN, "%.500s", err) > 0;
    rules_seed_mode(before);
    if (!rc) {
        if (o.report.seed_rules)
            ir_text_add(body, "seed-rules\n");
        rules_report_lines(&o.report, add_line, body);
        ir_text_add(body, "\n");
        size_t n;
        char *text = ir_print(o.graph, &n);
        if (text)
            ir_text_put(body, text, n);
        else
            rc = snprintf(why, IR_ERR_LEN, "the rewritten graph does not print") > 0;
        free(text);
        rules_optimized_free(&o);
    }
    shim_free(shim);
    ir_graph_free(g);
    return rc;
}

/* Answer a protocol break with an error message (as far as the client reads it) and fail with err. */
static int broken(int out_fd, uint64_t id, char err[IR_ERR_LEN])
{
    char ignored[IR_ERR_LEN];
    send_message(out_fd, KIND_ERROR, id, err, strlen(err), ignored);
    return -1;
}

int rules_external_serve(int in_fd, int out_fd, const char *name, const char *version, bool seed_rules,
                         char err[IR_ERR_LEN])
{
    err[0] = '\0';
    char hello[2 * LABEL_MAX + 32];
    int hn = snprintf(hello, sizeof hello, "name %.64s\nversion %.64s\n", name, version);
    if (send_message(out_fd, KIND_HELLO, 0, hello, (size_t)hn, err))
        return -1;
    struct reader *r = calloc(1, sizeof *r);
    if (!r)
        abort();
    r->fd = in_fd;
    int rc = 0;
    while (rc == 0) {
        char line[HEADER_MAX];
        size_t n = 0;
        while (n < sizeof line && (n == 0 || line[n - 1] != '\n') && reader_take(r, &line[n], 1) == 0)
            n++;
        if (n == 0 && r->eof)
            break; /* the client's clean end */
        struct header h;
        char why[IR_ERR_LEN];
        if (n == 0 || line[n - 1] != '\n' || parse_header(line, n, &h, why)) {
            snprintf(err, IR_ERR_LEN, "a request's header: %.400s", r->eof ? "the input ended inside it" : why);
            rc = broken(out_fd, 0, err);
        } else if (h.kind != KIND_REQUEST) {
            snprintf(err, IR_ERR_LEN, "a '%s' message where a request belongs", kind_names[h.kind]);
            rc = broken(out_fd, h.id, err);
        } else if (h.nbytes > SERVE_REQUEST_MAX) {
            snprintf(err, IR_ERR_LEN, "a request of %" PRIu64 " bytes, over the limit of %zu", h.nbytes,
                     SERVE_REQUEST_MAX);
            rc = broken(out_fd, h.id, err);
        } else {
            char *body = malloc((size_t)h.nbytes + 1);
            struct request q;
            if (!body) {
                snprintf(err, IR_ERR_LEN, "no memory for a request of %" PRIu64 " bytes", h.nbytes);
                rc = broken(out_fd, h.id, err);
            } else if (reader_take(r, body, (size_t)h.nbytes)) {
                snprintf(err, IR_ERR_LEN, "the input ended inside request %" PRIu64, h.id);
                rc = -1;
            } else if (body[h.nbytes] = '\0', parse_request(body, (size_t)h.nbytes, &q, why)) {
                snprintf(err, IR_ERR_LEN, "request %" PRIu64 ": %.400s", h.id, why);
                rc = broken(out_fd, h.id, err);
            } else {
                struct ir_text answer = {0};
                bool refused = serve_one(&q, seed_rules, &answer, why) != 0;
                size_t len = answer.n;
                char *text = ir_text_take(&answer);
                rc = refused ? send_message(out_fd, KIND_ERROR, h.id, why, strlen(why), err)
                             : send_message(out_fd, KIND_ANSWER, h.id, text, len, err);
                free(text);
            }
            free(body);
        }
    }
    free(r);
    return rc;
}
