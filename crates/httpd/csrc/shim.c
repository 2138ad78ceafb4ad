/* The APR ring and httpd config/log macros, as functions Rust can call. */
#include "httpd.h"
#include "http_config.h"
#include "http_core.h"
#include "http_log.h"
#include "http_request.h"
#include "apr_buckets.h"
#include "apr_strings.h"
#include "apr_signal.h"
#include "ap_listen.h"
#include "ap_mpm.h"
#include "mpm_common.h"
#include "mod_status.h"
#include "scoreboard.h"
#include "apr_shm.h"
#include "shim.h"
#include <errno.h>
#include <stdio.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

void gdn_brigade_insert_tail(apr_bucket_brigade *bb, apr_bucket *b)
{
    APR_BRIGADE_INSERT_TAIL(bb, b);
}

/* The first bucket of a brigade, or NULL when it is empty. */
apr_bucket *gdn_brigade_first(apr_bucket_brigade *bb)
{
    return APR_BRIGADE_EMPTY(bb) ? NULL : APR_BRIGADE_FIRST(bb);
}

/* What a bucket is: 0 data, 1 EOS, 2 FLUSH, 3 other metadata. */
int gdn_bucket_kind(const apr_bucket *b)
{
    if (APR_BUCKET_IS_EOS(b))
        return 1;
    if (APR_BUCKET_IS_FLUSH(b))
        return 2;
    return APR_BUCKET_IS_METADATA(b) ? 3 : 0;
}

apr_status_t gdn_bucket_read(apr_bucket *b, const char **data, apr_size_t *len,
                             int block)
{
    return apr_bucket_read(b, data, len, block ? APR_BLOCK_READ : APR_NONBLOCK_READ);
}

int gdn_status_is_eagain(apr_status_t st)
{
    return APR_STATUS_IS_EAGAIN(st);
}

void gdn_bucket_delete(apr_bucket *b)
{
    apr_bucket_delete(b);
}

/* The file a brigade holds whole, as core's default handler passes one:
 * a FILE bucket from the file's first byte, then EOS, and nothing else.
 * Its length in *len; NULL for any other brigade. */
apr_file_t *gdn_brigade_whole_file(apr_bucket_brigade *bb, apr_off_t *len)
{
    apr_bucket *b, *e;
    if (APR_BRIGADE_EMPTY(bb))
        return NULL;
    b = APR_BRIGADE_FIRST(bb);
    if (!APR_BUCKET_IS_FILE(b) || b->start != 0 || b->length == (apr_size_t)-1)
        return NULL;
    e = APR_BUCKET_NEXT(b);
    if (e == APR_BRIGADE_SENTINEL(bb) || !APR_BUCKET_IS_EOS(e)
        || APR_BUCKET_NEXT(e) != APR_BRIGADE_SENTINEL(bb))
        return NULL;
    *len = (apr_off_t)b->length;
    return ((apr_bucket_file *)b->data)->fd;
}

/* Workers waiting for a request (SERVER_READY) in the children that take
 * new ones (a live pid, not quiescing), as mod_status counts them; -1
 * without a scoreboard. */
int gdn_idle_workers(void)
{
    int i, j, daemons = 0, threads = 0, idle = 0;
    if (!ap_scoreboard_image
        || ap_mpm_query(AP_MPMQ_HARD_LIMIT_DAEMONS, &daemons) != APR_SUCCESS
        || ap_mpm_query(AP_MPMQ_HARD_LIMIT_THREADS, &threads) != APR_SUCCESS)
        return -1;
    for (i = 0; i < daemons; i++) {
        process_score *ps = ap_get_scoreboard_process(i);
        if (!ps || !ps->pid || ps->quiescing)
            continue;
        for (j = 0; j < threads; j++) {
            worker_score *ws = ap_get_scoreboard_worker_from_indexes(i, j);
            if (ws && ws->status == SERVER_READY)
                idle++;
        }
    }
    return idle;
}

/* Moves a bucket from its brigade to the end of another. */
void gdn_bucket_move(apr_bucket *b, apr_bucket_brigade *to)
{
    APR_BUCKET_REMOVE(b);
    APR_BRIGADE_INSERT_TAIL(to, b);
}

int gdn_log_enabled(const request_rec *r, int module_index, int level)
{
    return APLOG_R_MODULE_IS_LEVEL(r, module_index, level);
}

void gdn_log_r(const request_rec *r, int module_index, int level,
               apr_status_t status, const char *msg)
{
    ap_log_rerror_("mod_gzip_disk_ng", 0, module_index, level, status, r,
                   "%s", msg);
}

/* Opens a file the way core's default handler does, so sendfile follows
 * EnableSendfile. */
apr_status_t gdn_open_for_send(request_rec *r, const char *path,
                               apr_file_t **fd)
{
    core_dir_config *d = ap_get_core_module_config(r->per_dir_config);
    /* Non-blocking: a FIFO planted under a file's name must not hold a
     * worker (a regular file's reads never wait). */
    return apr_file_open(fd, path, APR_READ | APR_BINARY | APR_FOPEN_NONBLOCK
#if APR_HAS_SENDFILE
                         | AP_SENDFILE_ENABLED(d->enable_sendfile)
#endif
                         , 0, r->pool);
}

/* Whether EnableSendfile is on where the request's file lives. */
int gdn_sendfile_enabled(request_rec *r)
{
    core_dir_config *d = ap_get_core_module_config(r->per_dir_config);
    return AP_SENDFILE_ENABLED(d->enable_sendfile) != 0;
}

/* The FileETag components ap_make_etag_ex uses for `r` (FileETag as
 * merged for its directory), or -1 where it reads more than a file's
 * stat and the request's time: a digest ETag (the file's bytes), a
 * strong one a module asked for, a variant list validator. */
int gdn_etag_bits(const request_rec *r)
{
    core_dir_config *d = ap_get_core_module_config(r->per_dir_config);
    etag_components_t bits = (d->etag_bits & ~d->etag_remove) | d->etag_add;
    if (r->vlist_validator) {
        return -1;
    }
#ifdef AP_REQUEST_STRONG_ETAG
    if (AP_REQUEST_IS_STRONG_ETAG(r)) {
        return -1;
    }
#endif
#ifdef ETAG_DIGEST
    if (bits & ETAG_DIGEST) {
        return -1;
    }
#endif
    return (int)bits;
}

/* Appends a file bucket honouring EnableMMAP and ReadBufferSize. */
void gdn_insert_file(request_rec *r, apr_bucket_brigade *bb, apr_file_t *fd,
                     apr_off_t start, apr_off_t len)
{
    core_dir_config *d = ap_get_core_module_config(r->per_dir_config);
    apr_bucket *e = apr_brigade_insert_file(bb, fd, start, len, r->pool);
#if APR_HAS_MMAP
    if (d->enable_mmap == ENABLE_MMAP_OFF) {
        (void)apr_bucket_file_enable_mmap(e, 0);
    }
#endif
#if APR_MAJOR_VERSION > 1 || (APU_MAJOR_VERSION == 1 && APU_MINOR_VERSION >= 6)
    if (d->read_buf_size) {
        apr_bucket_file_set_buf_size(e, d->read_buf_size);
    }
#endif
}

void *gdn_module_config(ap_conf_vector_t *cv, const module *m)
{
    return ap_get_module_config(cv, m);
}

/* The module's slot in r->request_config, by the module's index, as
 * ap_get_module_config and ap_set_module_config reach it. */
void *gdn_request_state(const request_rec *r, int module_index)
{
    return ((void **)r->request_config)[module_index];
}

void gdn_set_request_state(request_rec *r, int module_index, void *value)
{
    ((void **)r->request_config)[module_index] = value;
}

/* ---- Server-level log lines, and what post_config and check_config need ---- */

void gdn_log_s(const server_rec *s, int module_index, int level,
               apr_status_t status, const char *msg)
{
    ap_log_error_("mod_gzip_disk_ng", 0, module_index, level, status, s,
                  "%s", msg);
}

const char *gdn_document_root(server_rec *s)
{
    core_server_config *conf = ap_get_core_module_config(s->module_config);
    return conf ? conf->ap_document_root : NULL;
}

/* The first of the two configuration passes at start-up, after which
 * nothing is started (as mod_cgid does). */
int gdn_config_dry_run(void)
{
    return ap_state_query(AP_SQ_MAIN_STATE) == AP_SQ_MS_CREATE_PRE_CONFIG;
}

/* ---- A supervised helper process (as mod_cgid supervises its daemon) ----
 *
 * The channel is a SOCK_SEQPACKET socketpair: it has no name anyone could
 * open, only processes of this Apache inherit it (close-on-exec, so CGI
 * programs do not), each message arrives whole, a send never blocks
 * (MSG_DONTWAIT: a full queue drops it) and never raises SIGPIPE. */

#define HELPER_STARTUP_ERROR 254

/* A line of the error log with the module's tag, as ap_log_error under
 * APLOG_USE_MODULE would write it. */
#define HELPER_LOG(h, level, status, ...)                                   \
    ap_log_error_(__FILE__, __LINE__, (h)->module_index, (level), (status), \
                  (h)->s, __VA_ARGS__)

struct gdn_helper {
    apr_pool_t *pconf;
    server_rec *s;
    int module_index; /* for the module's tag on every line logged */
    const char *name;
    int nice;
    gdn_helper_main main;
    void *arg;
    int fds[2]; /* [0] the helper's end, [1] the children's */
    apr_proc_t *proc;
};

/* Where the kernel keeps the process's argv strings, the area
 * /proc/PID/cmdline shows: fields 48 and 49 of /proc/self/stat
 * (arg_start, arg_end). httpd's own argv array is no guide: the MPM
 * rewrites it with copies. */
static int helper_argv_area(char **start, size_t *room)
{
    char buf[2048], *p;
    unsigned long long from = 0, to = 0;
    int fd = open("/proc/self/stat", O_RDONLY | O_CLOEXEC), field;
    ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);
    if (fd >= 0) {
        close(fd);
    }
    if (n <= 0) {
        return 0;
    }
    buf[n] = '\0';
    p = strrchr(buf, ')');
    /* After ") " comes field 3; arg_start is field 48. */
    for (field = 2; p != NULL && field < 48; field++) {
        p = strchr(p + 1, ' ');
    }
    if (p == NULL || sscanf(p + 1, "%llu %llu", &from, &to) != 2 || to <= from) {
        return 0;
    }
    *start = (char *)(uintptr_t)from;
    *room = (size_t)(to - from);
    return 1;
}

/* What `ps -ef` shows of the helper: as postgres does, the argv area is
 * overwritten in place (in this forked process only: the parent's stays
 * as it was) with "<program>: <name>", or the name alone where that does
 * not fit, padded with NULs (the kernel then reads no further). The
 * program's short name points into the area, so it is copied first. */
static void helper_set_title(const gdn_helper *h)
{
    const process_rec *p = h->s->process;
    char title[256], *start;
    size_t room, len;
    if (!helper_argv_area(&start, &room)) {
        return;
    }
    len = (size_t)snprintf(title, sizeof(title), "%s: %s",
                           p && p->short_name ? p->short_name : "httpd", h->name);
    if (len >= room || len >= sizeof(title)) {
        len = (size_t)snprintf(title, sizeof(title), "%s", h->name);
    }
    if (len >= room) {
        len = room - 1;
    }
    memset(start, 0, room);
    memcpy(start, title, len);
}

static apr_status_t helper_close_channel(void *data)
{
    gdn_helper *h = data;
    close(h->fds[0]);
    close(h->fds[1]);
    return APR_SUCCESS;
}

static void helper_in_child(gdn_helper *h)
{
    int sig[] = {SIGTERM, SIGHUP, SIGINT, SIGUSR1, SIGWINCH, SIGCHLD};
    size_t i;
    for (i = 0; i < sizeof(sig) / sizeof(sig[0]); i++) {
        apr_signal(sig[i], SIG_DFL);
    }
    apr_signal(SIGPIPE, SIG_IGN);
    ap_close_listeners();
    close(h->fds[1]);
    helper_set_title(h);
    if (ap_run_drop_privileges(h->pconf, h->s) != OK) {
        _exit(HELPER_STARTUP_ERROR);
    }
    if (setpriority(PRIO_PROCESS, 0, h->nice) != 0) {
        /* A lower priority is a courtesy, not a condition. */
    }
    prctl(PR_SET_NAME, h->name, 0, 0, 0);
    h->main(h->fds[0], h->s, h->arg);
    _exit(0);
}

static void helper_maint(int reason, void *data, int status);

static apr_status_t helper_fork(gdn_helper *h)
{
    apr_proc_t *proc = apr_pcalloc(h->pconf, sizeof(*proc));
    apr_status_t rv = apr_proc_fork(proc, h->pconf);
    if (rv == APR_INCHILD) {
        helper_in_child(h);
    }
    if (rv != APR_INPARENT) {
        HELPER_LOG(h, APLOG_ERR, rv, "%s: cannot fork", h->name);
        return rv;
    }
    apr_pool_note_subprocess(h->pconf, proc, APR_KILL_AFTER_TIMEOUT);
    apr_proc_other_child_register(proc, helper_maint, h, NULL, h->pconf);
    h->proc = proc;
    HELPER_LOG(h, APLOG_NOTICE, 0, "%s started (pid %d)", h->name, (int)proc->pid);
    return APR_SUCCESS;
}

static void helper_maint(int reason, void *data, int status)
{
    gdn_helper *h = data;
    int state = AP_MPMQ_STOPPING;
    switch (reason) {
    case APR_OC_REASON_DEATH:
    case APR_OC_REASON_LOST:
        apr_proc_other_child_unregister(h);
        if (ap_mpm_query(AP_MPMQ_MPM_STATE, &state) != APR_SUCCESS
            || state == AP_MPMQ_STOPPING) {
            break;
        }
        if (status == HELPER_STARTUP_ERROR) {
            HELPER_LOG(h, APLOG_CRIT, 0, "%s could not start (privileges); not restarted",
                       h->name);
            break;
        }
        HELPER_LOG(h, APLOG_ERR, 0, "%s (pid %d) died (status %d); restarting", h->name,
                   (int)h->proc->pid, status);
        helper_fork(h);
        break;
    case APR_OC_REASON_RESTART:
        apr_proc_other_child_unregister(h);
        break;
    case APR_OC_REASON_UNREGISTER:
        kill(h->proc->pid, SIGTERM);
        break;
    }
}

gdn_helper *gdn_helper_start(apr_pool_t *pconf, server_rec *s, int module_index,
                             const char *name, int nice, gdn_helper_main main,
                             void *arg)
{
    gdn_helper *h = apr_pcalloc(pconf, sizeof(*h));
    h->pconf = pconf;
    h->s = s;
    h->module_index = module_index;
    h->name = apr_pstrdup(pconf, name);
    h->nice = nice;
    h->main = main;
    h->arg = arg;
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, h->fds) != 0) {
        HELPER_LOG(h, APLOG_ERR, errno, "%s: cannot make its channel", name);
        return NULL;
    }
    apr_pool_cleanup_register(pconf, h, helper_close_channel, apr_pool_cleanup_null);
    if (helper_fork(h) != APR_SUCCESS) {
        return NULL;
    }
    return h;
}

int gdn_helper_channel(const gdn_helper *h)
{
    return h->fds[1];
}

int gdn_helper_pid(const gdn_helper *h)
{
    return h->proc ? (int)h->proc->pid : -1;
}

/* mod_status's optional hook: a module's section in server-status. The
 * hook is registered whether or not mod_status is loaded (or loaded
 * later); it runs only when mod_status asks. */
void gdn_hook_status(gdn_status_fn fn, int order)
{
    APR_OPTIONAL_HOOK(ap, status_hook, fn, NULL, NULL, order);
}

int gdn_status_is_short(int flags)
{
    return (flags & AP_STATUS_SHORT) != 0;
}

/* Anonymous shared memory of `size` bytes in the process pool (so it
 * outlives restarts), found again under `key` by later generations of the
 * configuration; NULL when it cannot be made. `fresh` says it is new (its
 * user zeroes it). */
void *gdn_shared_memory(server_rec *s, int module_index, const char *key, apr_size_t size,
                        int *fresh)
{
    apr_pool_t *p = s->process->pool;
    apr_shm_t *shm = NULL;
    void *found = NULL;
    apr_status_t rv;
    apr_pool_userdata_get(&found, key, p);
    *fresh = 0;
    if (found != NULL) {
        shm = found;
        if (apr_shm_size_get(shm) >= size) {
            return apr_shm_baseaddr_get(shm);
        }
    }
    rv = apr_shm_create(&shm, size, NULL, p);
    if (rv != APR_SUCCESS) {
        ap_log_error_(__FILE__, __LINE__, module_index, APLOG_ERR, rv, s,
                      "cannot create shared memory for %s", key);
        return NULL;
    }
    apr_pool_userdata_set(shm, apr_pstrdup(p, key), NULL, p);
    *fresh = 1;
    return apr_shm_baseaddr_get(shm);
}
