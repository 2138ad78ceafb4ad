/* The APR ring and httpd config/log macros, as functions Rust can call. */
#include "httpd.h"
#include "http_config.h"
#include "http_core.h"
#include "http_log.h"
#include "http_request.h"
#include "apr_buckets.h"
#include "apr_fnmatch.h"
#include "apr_strings.h"
#include "apr_signal.h"
#include "ap_listen.h"
#include "ap_mpm.h"
#include "mpm_common.h"
#include "mod_status.h"
#include "apr_shm.h"
#include "shim.h"
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

void gdn_brigade_insert_tail(apr_bucket_brigade *bb, apr_bucket *b)
{
    APR_BRIGADE_INSERT_TAIL(bb, b);
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
    return apr_file_open(fd, path, APR_READ | APR_BINARY
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

/* ---- Access rules for a sibling's own name ----
 *
 * A sibling (page.html.gz) is another file name: Apache's <Files>,
 * <FilesMatch>, <Location>, <If> and Require apply to it as to a request
 * for it. Asking httpd (a file subrequest, as mod_negotiation does for its
 * variants) is exact but costs a whole request walk, so it is done only
 * when the answer could differ from the request's own: a section matches
 * one name and not the other, an <If> is in effect, .htaccess may add
 * authorization, or a Require names a provider that may look at the file.
 */

/* Require providers whose answer cannot depend on the file name. */
static const char *const name_blind_providers[] = {
    "all", "env", "ip", "host", "forward-dns", "local", "method", "user",
    "group", "valid-user", "dbd-group", "dbd-login", "dbd-logout",
    "dbm-group", "ldap-user", "ldap-group", "ldap-dn", "ldap-attribute",
    "ldap-filter", "ldap-search", NULL
};

/* 1 when a Require in the configuration files names a provider that may
 * depend on the file (expr, file-owner, file-group, aliases, unknown). */
static int require_may_see_file = 1;

static int provider_is_name_blind(const char *args, apr_pool_t *p)
{
    const char *word = ap_getword_conf(p, &args);
    const char *const *s;
    if (!strcasecmp(word, "not")) {
        word = ap_getword_conf(p, &args);
    }
    for (s = name_blind_providers; *s; s++) {
        if (!strcasecmp(word, *s)) {
            return 1;
        }
    }
    return 0;
}

static int tree_has_file_require(const ap_directive_t *d, apr_pool_t *p)
{
    for (; d; d = d->next) {
        if (!strcasecmp(d->directive, "Require") && d->args
            && !provider_is_name_blind(d->args, p)) {
            return 1;
        }
        if (d->first_child && tree_has_file_require(d->first_child, p)) {
            return 1;
        }
    }
    return 0;
}

void gdn_scan_config(apr_pool_t *p)
{
    require_may_see_file = tree_has_file_require(ap_conftree, p);
}

/* Regex results per process, remembered by content: the compiled regex,
 * its pattern and the name tried (one lock: requests move between worker
 * threads, so a per-thread memo would miss on most of them). A section parsed from .htaccess lives
 * in a request pool whose memory is reused, so a hit also requires the
 * same pattern text, which fixes the regex's meaning. Saves the two
 * pcre2 runs per section and request (Debian's own <FilesMatch "^\.ht">
 * is in every site's configuration). */
#define MEMO_SLOTS 64
#define MEMO_PAT 64
#define MEMO_NAME 128
struct regex_memo {
    const ap_regex_t *r;
    int matches;
    char pat[MEMO_PAT];
    char name[MEMO_NAME];
};
static struct regex_memo regex_memo[MEMO_SLOTS];
static pthread_mutex_t regex_memo_lock = PTHREAD_MUTEX_INITIALIZER;

static int regex_matches(const core_dir_config *e, const char *name,
                         size_t nl)
{
    apr_uint32_t h = (apr_uint32_t)nl * 2654435761u;
    struct regex_memo *m;
    int hit, matches;
    /* A cheap slot index (a miss costs a pcre2 run, never a wrong
     * answer): the length, the last four bytes, the regex. */
    if (nl >= 4) {
        apr_uint32_t last;
        memcpy(&last, name + nl - 4, 4);
        h ^= last * 2246822519u;
    }
    h ^= (apr_uint32_t)((apr_uintptr_t)e->r >> 4);
    m = &regex_memo[(h ^ (h >> 15)) % MEMO_SLOTS];
    pthread_mutex_lock(&regex_memo_lock);
    hit = m->r == e->r && !strcmp(m->name, name) && !strcmp(m->pat, e->d);
    matches = m->matches;
    pthread_mutex_unlock(&regex_memo_lock);
    if (hit) {
        return matches;
    }
    matches = ap_regexec(e->r, name, 0, NULL, 0) == 0;
    if (nl < MEMO_NAME && strlen(e->d) < MEMO_PAT) {
        pthread_mutex_lock(&regex_memo_lock);
        m->r = e->r;
        m->matches = matches;
        strcpy(m->pat, e->d);
        memcpy(m->name, name, nl + 1);
        pthread_mutex_unlock(&regex_memo_lock);
    }
    return matches;
}

static int section_matches(const core_dir_config *e, const char *name,
                           size_t nl, int prefix)
{
    size_t len;
    if (e->r) {
        return regex_matches(e, name, nl);
    }
    if (e->d_is_fnmatch) {
        return apr_fnmatch(e->d, name, APR_FNM_PATHNAME) == APR_SUCCESS;
    }
    if (!prefix) {
        return strcmp(e->d, name) == 0;
    }
    /* <Location>: a path prefix ending at a segment boundary. */
    len = strlen(e->d);
    return strncmp(e->d, name, len) == 0
           && (len == 0 || e->d[len - 1] == '/' || name[len] == '/'
               || name[len] == '\0');
}

static int sections_differ(const apr_array_header_t *secs, const char *a,
                           size_t al, const char *b, size_t bl, int prefix)
{
    int i;
    if (!secs) {
        return 0;
    }
    for (i = 0; i < secs->nelts; i++) {
        const core_dir_config *e =
            ap_get_core_module_config(((ap_conf_vector_t **)secs->elts)[i]);
        if (section_matches(e, a, al, prefix)
            != section_matches(e, b, bl, prefix)) {
            return 1;
        }
    }
    return 0;
}

int gdn_sibling_rules_may_differ(request_rec *r, const char *suffix)
{
    core_dir_config *d = ap_get_core_module_config(r->per_dir_config);
    core_server_config *s =
        ap_get_core_module_config(r->server->module_config);
    const char *base;
    char sib[256];
    size_t bl, sl;
    int files = d->sec_file && d->sec_file->nelts;
    int locs = s->sec_url && s->sec_url->nelts;
    if (require_may_see_file || (d->sec_if && d->sec_if->nelts)
        || (d->override & OR_AUTHCFG)
        || (d->override_list && !apr_is_empty_table(d->override_list))) {
        return 1;
    }
    if (!files && !locs) {
        return 0;
    }
    base = strrchr(r->filename, '/');
    base = base ? base + 1 : r->filename;
    bl = strlen(base);
    sl = strlen(suffix);
    if (bl + sl >= sizeof(sib)) {
        return 1;
    }
    memcpy(sib, base, bl);
    memcpy(sib + bl, suffix, sl + 1);
    if (files && sections_differ(d->sec_file, base, bl, sib, bl + sl, 0)) {
        return 1;
    }
    if (locs && r->uri && *r->uri) {
        const char *uri = apr_pstrcat(
            r->pool, ap_make_dirstr_parent(r->pool, r->uri), sib, NULL);
        return sections_differ(s->sec_url, r->uri, strlen(r->uri), uri,
                               strlen(uri), 1);
    }
    return locs;
}

int gdn_sibling_status(request_rec *r, const char *suffix)
{
    const char *base = strrchr(r->filename, '/');
    ap_conf_vector_t *own = r->per_dir_config;
    request_rec *rr;
    int status;
    base = base ? base + 1 : r->filename;
    /* httpd skips authorization for a subrequest whose configuration is
     * its parent's (same pointer), but a Require may judge the file name:
     * an equal copy under another pointer makes it run for the sibling. */
    r->per_dir_config =
        ap_merge_per_dir_configs(r->pool, own, ap_create_request_config(r->pool));
    rr = ap_sub_req_lookup_file(apr_pstrcat(r->pool, base, suffix, NULL), r,
                                NULL);
    r->per_dir_config = own;
    status = rr->status;
    ap_destroy_sub_req(rr);
    return status;
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

struct gdn_helper {
    apr_pool_t *pconf;
    server_rec *s;
    const char *name;
    int nice;
    gdn_helper_main main;
    void *arg;
    int fds[2]; /* [0] the helper's end, [1] the children's */
    apr_proc_t *proc;
};

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
        ap_log_error(APLOG_MARK, APLOG_ERR, rv, h->s, "%s: cannot fork", h->name);
        return rv;
    }
    apr_pool_note_subprocess(h->pconf, proc, APR_KILL_AFTER_TIMEOUT);
    apr_proc_other_child_register(proc, helper_maint, h, NULL, h->pconf);
    h->proc = proc;
    ap_log_error(APLOG_MARK, APLOG_NOTICE, 0, h->s, "%s started (pid %d)", h->name,
                 (int)proc->pid);
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
            ap_log_error(APLOG_MARK, APLOG_CRIT, 0, h->s,
                         "%s could not start (privileges); not restarted", h->name);
            break;
        }
        ap_log_error(APLOG_MARK, APLOG_ERR, 0, h->s,
                     "%s (pid %d) died (status %d); restarting", h->name,
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

gdn_helper *gdn_helper_start(apr_pool_t *pconf, server_rec *s, const char *name,
                             int nice, gdn_helper_main main, void *arg)
{
    gdn_helper *h = apr_pcalloc(pconf, sizeof(*h));
    h->pconf = pconf;
    h->s = s;
    h->name = apr_pstrdup(pconf, name);
    h->nice = nice;
    h->main = main;
    h->arg = arg;
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, h->fds) != 0) {
        ap_log_error(APLOG_MARK, APLOG_ERR, errno, s, "%s: cannot make its channel", name);
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
void *gdn_shared_memory(server_rec *s, const char *key, apr_size_t size, int *fresh)
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
        ap_log_error(APLOG_MARK, APLOG_ERR, rv, s, "cannot create shared memory for %s", key);
        return NULL;
    }
    apr_pool_userdata_set(shm, apr_pstrdup(p, key), NULL, p);
    *fresh = 1;
    return apr_shm_baseaddr_get(shm);
}
