/* The mechanism of the sibling checks; the module decides (its policy
 * crate, at post_config and on each answer).
 *
 * A sibling (page.html.gz beside page.html) is asked of Apache as its
 * twin: a GET request of its own for the sibling's URI, built as httpd
 * builds a URI (escaped, slashes merged as configured, path info left
 * out), from this client (its request line's protocol, its headers as
 * read, its address), run as httpd runs a request it has read:
 * post_read_request, translate_name, the directory and location walks,
 * <If>, header_parser, access, authentication and fixups, with nothing
 * of the page's request reused. What would answer it (its handler, type
 * and content filters) goes back to the module, which judges it.
 *
 * The twin costs a request walk. Where the module judged a server's
 * configuration to allow it, it gives a shorter answer of its own (its
 * policy::short, over the sections sections.c reads). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <stdint.h>
#include <string.h>
#include "httpd.h"
#include "http_config.h"
#include "http_core.h"
#include "http_log.h"
#include "http_protocol.h"
#include "http_request.h"
#include "http_ssl.h"
#include "mod_core.h"
#include "apr_hash.h"
#include "apr_hooks.h"
#include "apr_strings.h"
#include "shim.h"
#include <string.h>
#include <strings.h>

/* Other modules' private records (mod_filter's providers below, and
 * those of mod_authz_core, mod_access_compat and mod_rewrite) are read
 * only on the module ABI their layouts were written against. */
#if MODULE_MAGIC_NUMBER_MAJOR == 20120211
#define FOREIGN_LAYOUTS 1
#else
#define FOREIGN_LAYOUTS 0
#endif

/* ---- What the configuration was judged to allow ---- */

/* The layout every hook's registration entry shares (apr_hooks.h's
 * APR_DECLARE_EXTERNAL_HOOK). */
typedef struct {
    void (*fn)(void);
    const char *name;
    const char *const *before;
    const char *const *after;
    int order;
} hook_link;

/* The hooks `gdn_hook_modules` reads, by name. */
static const struct {
    const char *name;
    apr_array_header_t *(*get)(void);
} hook_getters[] = {
    {"post_read_request", ap_hook_get_post_read_request},
    {"pre_translate_name", ap_hook_get_pre_translate_name},
    {"translate_name", ap_hook_get_translate_name},
    {"map_to_storage", ap_hook_get_map_to_storage},
    {"post_perdir_config", ap_hook_get_post_perdir_config},
    {"header_parser", ap_hook_get_header_parser},
    {"access_checker", ap_hook_get_access_checker},
    {"access_checker_ex", ap_hook_get_access_checker_ex},
    {"check_user_id", ap_hook_get_check_user_id},
    {"auth_checker", ap_hook_get_auth_checker},
    {"type_checker", ap_hook_get_type_checker},
    {"fixups", ap_hook_get_fixups},
    {"insert_filter", ap_hook_get_insert_filter},
    {"handler", ap_hook_get_handler},
};

const char *gdn_hook_modules(apr_pool_t *p, const char *hook)
{
    size_t i;
    for (i = 0; i < sizeof(hook_getters) / sizeof(hook_getters[0]); i++) {
        if (!strcmp(hook_getters[i].name, hook)) {
            apr_array_header_t *links = hook_getters[i].get();
            const char *out = "";
            int j;
            for (j = 0; links && j < links->nelts; j++) {
                const char *m = ((hook_link *)links->elts)[j].name;
                out = apr_pstrcat(p, out, m ? m : "", "\n", NULL);
            }
            return out;
        }
    }
    return NULL;
}

/* ---- What the module judged of the configuration ---- */

/* Whether a request's headers may be edited after they are read (then
 * the headers as read are kept for every request, for its siblings'
 * twins). */
static int headers_edited;

static void learn_filters(const gdn_sibling_rules *rules);
static void learn_recorders(apr_pool_t *pconf, const gdn_sibling_rules *rules);
static void learn_twin_log(const gdn_sibling_rules *rules);
static const char *read_back(apr_pool_t *pconf, server_rec *s);
static const char *foreign_unread;
#define KIND_SLOTS 64
static uintptr_t kind_slots[KIND_SLOTS];

void gdn_scan_config(apr_pool_t *pconf, server_rec *main_server,
                     const gdn_sibling_rules *rules)
{
    headers_edited = rules->headers_edited;
    learn_filters(rules);
    learn_recorders(pconf, rules);
    learn_twin_log(rules);
    foreign_unread = read_back(pconf, main_server);
    /* What filters are was learned above: none is remembered before. */
    memset(kind_slots, 0, sizeof(kind_slots));
}

/* ---- The sibling's URI, as httpd would have it ---- */

/* The decoded path of the request's file as its URI names it: r->uri
 * without the path info after the file. NULL when they disagree. */
static const char *file_uri(request_rec *r, apr_size_t *len)
{
    apr_size_t ul, pl;
    if (!r->uri || r->uri[0] != '/') {
        return NULL;
    }
    ul = strlen(r->uri);
    pl = r->path_info ? strlen(r->path_info) : 0;
    if (pl > ul || (pl && strcmp(r->uri + ul - pl, r->path_info))) {
        return NULL;
    }
    *len = ul - pl;
    return r->uri;
}

/* ---- The exact answer: the sibling's twin request ---- */

/* A sibling's check is the direct request for its URI, made as Apache
 * makes one from a request line it has read: a request of its own on the
 * client's connection (ap_create_request), with the client's request
 * line, protocol, headers as read and address, nothing of the page's
 * request (its environment, notes, directory walk, user), and run through
 * post_read_request (but the hooks that only record a request, which it
 * is not) and every step of ap_process_request_internal as a main
 * request: mod_setenvif's server and directory rules, other
 * header_parser hooks, translate_name, mod_rewrite's rules that skip
 * subrequests ([R], [NS]), authentication and authorization. Only the
 * handler is not run (what it would be is read: answer_refusal). */

/* The twin being run on this thread, if any, and the request that asked. */
static __thread request_rec *twin;
static __thread const request_rec *twin_asker;
/* Why the twin was stopped before its access hooks, if it was. */
static __thread const char *twin_stopped;
/* A twin's own log level, as the module chose it (gdn_sibling_rules):
 * what its hooks log is of a request no client made. Set when the twin
 * is made, and again after its walks, which set a per-directory
 * LogLevel where one is configured; `twin_log_set` 0 leaves the
 * configuration's. */
static struct ap_logconf twin_log = {NULL, APLOG_CRIT};
static int twin_log_set;

static void learn_twin_log(const gdn_sibling_rules *rules)
{
    twin_log_set = rules->twin_log_level >= 0;
    twin_log.level = twin_log_set ? rules->twin_log_level : APLOG_CRIT;
}
/* How many twins run now, in all threads: a hook every request meets
 * reads this plain word, and the thread's own twin only when one runs. */
static int twins_running;

#define HEADERS_NOTE "gdn-headers-as-read"

/* The request `r` was made from: the one read off the connection. */
static const request_rec *initial_of(const request_rec *r)
{
    while (r->main || r->prev) {
        r = r->main ? r->main : r->prev;
    }
    return r;
}

static int is_sibling_check(const request_rec *r)
{
    while (r->main) {
        r = r->main;
    }
    return twin && r == twin;
}

/* post_read_request, first of all: the headers as read, kept where a
 * module may edit them later. */
static int keep_headers_as_read(request_rec *r)
{
    if (headers_edited && !r->main && !r->prev && !is_sibling_check(r)) {
        apr_pool_userdata_setn(apr_table_copy(r->pool, r->headers_in),
                               HEADERS_NOTE, NULL, r->pool);
    }
    return DECLINED;
}

#define HANDLER_BEFORE_NOTE "gzip-disk-ng-handler-before"

/* The module's gate for a twin, set at hook registration: asked, on a
 * twin only, at the last step before its access hooks (header_parser,
 * first of all), why the twin must stop there, or NULL. A hook there
 * (mod_ssl's, asking the client for a certificate again) would act on
 * the client's connection; which ones, the module decides. */
static gdn_twin_gate_fn twin_gate;

void gdn_set_twin_gate(gdn_twin_gate_fn gate)
{
    twin_gate = gate;
}

static int gate_before_access(request_rec *r)
{
    const char *why;
    if (!__atomic_load_n(&twins_running, __ATOMIC_RELAXED) || r != twin) {
        return DECLINED;
    }
    if (twin_log_set) {
        r->log = &twin_log;
    }
    if (!twin_asker || !twin_gate) {
        return DECLINED;
    }
    why = twin_gate(r, twin_asker);
    if (why) {
        twin_stopped = why;
        return HTTP_FORBIDDEN;
    }
    return DECLINED;
}

int gdn_conn_is_tls(const request_rec *r)
{
    conn_rec *c = r->connection->master ? r->connection->master
                                        : r->connection;
    return ap_ssl_conn_is_ssl(c);
}

int gdn_records_differ(const request_rec *a, const request_rec *b,
                       const char *module_name)
{
    const module *m = ap_find_linked_module(module_name);
    return m && ap_get_module_config(a->per_dir_config, m)
                    != ap_get_module_config(b->per_dir_config, m);
}

/* The handler a request had before core's SetHandler/ForceType fixup
 * (core_override_type, the first of fixups) replaced it: the one a
 * ScriptAlias, an AddHandler or a proxy mapping gave it. */
static int keep_handler_before_override(request_rec *r)
{
    if (r->handler) {
        apr_table_setn(r->notes, HANDLER_BEFORE_NOTE, r->handler);
    }
    return DECLINED;
}

void gdn_register_sibling_hooks(void)
{
    static const char *const before_core[] = {"core.c", NULL};
    ap_hook_post_read_request(keep_headers_as_read, NULL, NULL,
                              APR_HOOK_REALLY_FIRST);
    ap_hook_fixups(keep_handler_before_override, NULL, before_core,
                   APR_HOOK_REALLY_FIRST);
    ap_hook_header_parser(gate_before_access, NULL, NULL,
                          APR_HOOK_REALLY_FIRST);
}

const char *gdn_handler_before_override(const request_rec *r)
{
    return apr_table_get(r->notes, HANDLER_BEFORE_NOTE);
}

int gdn_run_handler_as(request_rec *r, const char *handler)
{
    r->handler = apr_pstrdup(r->pool, handler);
    return ap_run_handler(r);
}

int gdn_in_sibling_check(const request_rec *r)
{
    return is_sibling_check(r);
}

/* The records of the filters the module named as leaving a response's
 * content as the file holds it (compression, caching, header edits),
 * found once per configuration, so that a request tells them by address. mod_deflate's
 * and mod_brotli's (the compressors) step aside, leaving no trace, from a
 * response that already has a Content-Encoding: their first checks all
 * end in removing themselves, no header touched before. */
#define KNOWN_FILTERS 32
enum { FILTER_UNKNOWN, FILTER_PLAIN, FILTER_COMPRESSOR, FILTER_CODER };
static struct {
    const ap_filter_rec_t *frec;
    ap_out_filter_func func;
    int kind;
} known_filters[KNOWN_FILTERS];
static int known_filter_count;
/* What a harness is, provider after provider (`gdn_sibling_rules`). */
#define FILTER_KINDS 4
static int harness_kind[FILTER_KINDS * FILTER_KINDS];
static int harness_start;

/* mod_filter's provider record, as httpd 2.4 lays it out
 * (modules/filters/mod_filter.c): read, never written. A record with
 * providers is mod_filter's harness (FilterDeclare, and
 * AddOutputFilterByType's `BYTYPE:` ones), named as the admin chose.
 * Read only once the start-up read-back found one of its own as written
 * (`filter_read_back`). */
struct filter_provider {
    void *expr;
    const char **types;
    ap_filter_rec_t *frec;
    struct filter_provider *next;
};

static int registered_kind(const ap_filter_rec_t *frec)
{
    int i;
    for (i = 0; i < known_filter_count; i++) {
        if (known_filters[i].frec == frec) {
            return known_filters[i].func == frec->filter_func.out_func
                ? known_filters[i].kind : FILTER_UNKNOWN;
        }
    }
    return FILTER_UNKNOWN;
}

/* What a filter record is: one of `known_filters`, or mod_filter's
 * harness, its providers' kinds folded as the module's rule says
 * (`harness_kind`), else unknown. */
static int fold_kind(const ap_filter_rec_t *frec)
{
    const struct filter_provider *p;
    int kind = registered_kind(frec);
    /* A harness's providers are read only once the read-back found
     * mod_filter's records as written (else it is unknown). */
    if (kind || !frec->providers || !FOREIGN_LAYOUTS || foreign_unread) {
        return kind;
    }
    kind = harness_start;
    for (p = (const struct filter_provider *)frec->providers; p; p = p->next) {
        int k = p->frec ? registered_kind(p->frec) : FILTER_UNKNOWN;
        kind = harness_kind[kind * FILTER_KINDS + k];
    }
    return kind;
}

/* What `fold_kind` found, by record. A record's kind is fixed once the
 * configuration is read (a harness's providers too), so a request asks
 * this table rather than fold a harness's providers again. One word a
 * slot: the record's address with its kind in the low bits (records are
 * aligned), written and read whole, so a thread reads a pair another
 * wrote or an older one; a slot another record takes costs that one a
 * fold. Emptied once the configuration is read (`gdn_scan_config`),
 * before any request. */
#define KIND_BITS ((uintptr_t)3)

static int filter_kind(const ap_filter_rec_t *frec)
{
    uintptr_t at = (uintptr_t)frec;
    uintptr_t *slot = &kind_slots[(at >> 4) & (KIND_SLOTS - 1)];
    uintptr_t seen = __atomic_load_n(slot, __ATOMIC_RELAXED);
    int kind;
    if ((seen & ~KIND_BITS) == at && at) {
        return (int)(seen & KIND_BITS);
    }
    kind = fold_kind(frec);
    if (!(at & KIND_BITS) && (uintptr_t)kind <= KIND_BITS) {
        __atomic_store_n(slot, at | (uintptr_t)kind, __ATOMIC_RELAXED);
    }
    return kind;
}

/* The object (shared module or httpd itself) holding `addr`. */
static const void *object_of(const void *addr)
{
    Dl_info info;
    return addr && dladdr(addr, &info) ? info.dli_fbase : NULL;
}

/* The filters of `rules` that httpd registered: each found by its name,
 * and kept only where its function lies in the object of the module
 * named with it. */
static void learn_filters(const gdn_sibling_rules *rules)
{
    int i;
    /* A number out of range is unknown: every index stays in the table. */
    for (i = 0; i < FILTER_KINDS * FILTER_KINDS; i++) {
        int k = rules->harness[i];
        harness_kind[i] = k >= 0 && k < FILTER_KINDS ? k : FILTER_UNKNOWN;
    }
    harness_start = rules->harness_start >= 0 && rules->harness_start < FILTER_KINDS
        ? rules->harness_start : FILTER_UNKNOWN;
    known_filter_count = 0;
    for (i = 0; i < rules->filters && known_filter_count < KNOWN_FILTERS; i++) {
        ap_filter_rec_t *frec = ap_get_output_filter_handle(rules->filter_names[i]);
        const module *m = ap_find_linked_module(rules->filter_modules[i]);
        const void *home = object_of(m);
        if (!frec || !m || !home
            || object_of((const void *)frec->filter_func.out_func) != home) {
            continue;
        }
        known_filters[known_filter_count].frec = frec;
        known_filters[known_filter_count].func = frec->filter_func.out_func;
        known_filters[known_filter_count].kind = FILTER_PLAIN + rules->filter_kinds[i];
        known_filter_count++;
    }
}

/* The first of the content filters about to run on `r` (those before
 * the protocol's) not in `known_filters`, or a coder where `coders`;
 * NULL when there is none. */
static const char *first_filter(const request_rec *r, int coders)
{
    const ap_filter_t *f;
    for (f = r->output_filters; f && f != r->proto_output_filters; f = f->next) {
        int kind;
        if (f->frec->ftype >= AP_FTYPE_PROTOCOL) {
            break;
        }
        kind = filter_kind(f->frec);
        if (!kind || (coders && kind == FILTER_CODER)) {
            return f->frec->name ? f->frec->name : "an unnamed filter";
        }
    }
    return NULL;
}

/* Why a handler sending the file's bytes itself gives way on `r`: the
 * first filter that may change them or codes them as they pass. */
const char *gdn_content_filter(const request_rec *r)
{
    return first_filter(r, 1);
}

/* Removes the compression filters from a response the module sends with
 * a Content-Encoding, where they would only step aside: the same bytes
 * and headers, without their work. Kept where mod_filter may restore a
 * saved Range on dispatch (a filter declared `byteranges=no` or as
 * changing the length is in the chain). */
void gdn_skip_compressors(request_rec *r)
{
    ap_filter_t *f, *next;
    for (f = r->output_filters; f && f != r->proto_output_filters; f = f->next) {
        if (f->frec->proto_flags
            & (AP_FILTER_PROTO_NO_BYTERANGE | AP_FILTER_PROTO_CHANGE_LENGTH)) {
            return;
        }
    }
    for (f = r->output_filters; f && f != r->proto_output_filters; f = next) {
        next = f->next;
        if (f->frec->ftype < AP_FTYPE_PROTOCOL
            && filter_kind(f->frec) == FILTER_COMPRESSOR) {
            ap_remove_output_filter(f);
        }
    }
}

/* Moves `f` (a filter, or mod_filter's harness for it) ahead of the
 * compressors standing right before it in its request's chain, so that
 * of two that would code the response, `f` decides and they find its
 * Content-Encoding and step aside. Only past compressors (their order
 * among themselves is nobody's content), so no filter that may change the
 * bytes is passed; a harness of unknown layout is no compressor, and
 * nothing moves. */
void gdn_filter_before_compressors(ap_filter_t *f)
{
    request_rec *r = f->r;
    ap_filter_t **at, **first = NULL;
    for (at = &r->output_filters; *at && *at != f; at = &(*at)->next) {
        if (*at == r->proto_output_filters || (*at)->frec->ftype >= AP_FTYPE_PROTOCOL) {
            return;
        }
        if (filter_kind((*at)->frec) == FILTER_COMPRESSOR) {
            first = first ? first : at;
        }
        else {
            first = NULL;
        }
    }
    if (!*at || !first) {
        return;
    }
    *at = f->next;
    f->next = *first;
    *first = f;
}

/* What would answer the looked-up request `rr`, into `out`: its handler
 * and type, and the first content filter that may change its bytes. The
 * filters are the ones a request of its own would get: the insert_filter
 * hooks run on it (a lookup does not run them), the connection's chains
 * kept as they were. */
static void read_answer(request_rec *r, request_rec *rr, gdn_twin *out)
{
    conn_rec *c = rr->connection;
    ap_filter_t *o = c->output_filters, *in = c->input_filters;
    const char *filter;
    const char *before = apr_table_get(rr->notes, HANDLER_BEFORE_NOTE);
    out->handler = rr->handler ? apr_pstrdup(r->pool, rr->handler) : NULL;
    out->handler_before = before ? apr_pstrdup(r->pool, before) : NULL;
    out->content_type =
        rr->content_type ? apr_pstrdup(r->pool, rr->content_type) : NULL;
    ap_run_insert_filter(rr);
    filter = first_filter(rr, 0);
    out->filter = filter ? apr_pstrdup(r->pool, filter) : NULL;
    c->output_filters = o;
    c->input_filters = in;
}

/* TEST-NET-1 (RFC 5737): an address no rule of a real site names. */
#define ANONYMOUS_IP "192.0.2.1"

/* Makes `t` a client no rule knows: no headers but Host, the test
 * address, a failed reverse lookup. 0 when no such address can be made. */
static int anonymous_client(request_rec *t, const request_rec *first)
{
    apr_sockaddr_t *sa = NULL;
    const char *host = apr_table_get(first->headers_in, "Host");
    if (apr_sockaddr_info_get(&sa, ANONYMOUS_IP, APR_INET, 0, 0, t->pool)
        != APR_SUCCESS) {
        return 0;
    }
    if (host) {
        apr_table_setn(t->headers_in, "Host", apr_pstrdup(t->pool, host));
    }
    t->useragent_addr = sa;
    t->useragent_ip = apr_pstrdup(t->pool, ANONYMOUS_IP);
    t->useragent_host = apr_pstrdup(t->pool, "");
    return 1;
}

/* The direct request for `uri` (escaped, as a request line carries it)
 * from the client of `r`, or of a client no rule knows (`anonymous`), not
 * yet run. NULL when it cannot be made. */
static request_rec *make_twin(request_rec *r, const char *uri, int anonymous)
{
    const request_rec *first = initial_of(r);
    request_rec *t = ap_create_request(r->connection);
    void *kept = NULL;
    t->server = first->server;
    t->hostname = first->hostname;
    t->request_time = first->request_time;
    t->method = "GET";
    t->method_number = M_GET;
    t->protocol = apr_pstrdup(t->pool, first->protocol);
    t->proto_num = first->proto_num;
    t->the_request = apr_pstrcat(t->pool, "GET ", uri, " ", first->protocol, NULL);
    if (twin_log_set) {
        t->log = &twin_log;
    }
    ap_parse_uri(t, uri);
    /* Its body is read through HTTP_IN, as a request's read off the
     * connection is: with no Content-Length nor Transfer-Encoding (a twin
     * is made only for a request without a body), an end at once, never
     * the connection's bytes, for a hook that reads or discards it. */
    ap_add_input_filter_handle(ap_http_input_filter_handle, NULL, t,
                               t->connection);
    if (anonymous) {
        if (!anonymous_client(t, first)) {
            apr_pool_destroy(t->pool);
            return NULL;
        }
        return t;
    }
    apr_pool_userdata_get(&kept, HEADERS_NOTE, first->pool);
    t->headers_in = apr_table_copy(t->pool, kept ? kept : first->headers_in);
    return t;
}

/* The modules whose post_read_request hook only records a request it is
 * given (mod_log_forensic's "+" line, whose "-" line only a logged
 * request gets): a twin is no client's request, so it does not run
 * theirs. */
static const char **recorders;
static int recorder_count;

static void learn_recorders(apr_pool_t *pconf, const gdn_sibling_rules *rules)
{
    int i;
    recorder_count = rules->recorders > 0 ? rules->recorders : 0;
    recorders = apr_pcalloc(pconf, sizeof(*recorders) * (recorder_count + 1));
    for (i = 0; i < recorder_count; i++) {
        recorders[i] = apr_pstrdup(pconf, rules->recorder_modules[i]);
    }
}

static int is_recorder(const char *module)
{
    int i;
    for (i = 0; module && i < recorder_count; i++) {
        if (!strcasecmp(recorders[i], module)) {
            return 1;
        }
    }
    return 0;
}

/* post_read_request as ap_run_post_read_request runs it (each hook in
 * order while they answer OK or DECLINED), but the recorders' hooks. */
static int twin_post_read_request(request_rec *t)
{
    const apr_array_header_t *links = ap_hook_get_post_read_request();
    int i;
    if (!recorder_count || !links) {
        return ap_run_post_read_request(t);
    }
    for (i = 0; i < links->nelts; i++) {
        const ap_LINK_post_read_request_t *l =
            &((const ap_LINK_post_read_request_t *)links->elts)[i];
        int rv;
        if (is_recorder(l->szName)) {
            continue;
        }
        rv = l->pFunc(t);
        if (rv != OK && rv != DECLINED) {
            return rv;
        }
    }
    return OK;
}

/* Runs the twin `t` as httpd runs a request it has read, up to (not
 * including) its handler: the status it would be answered with, 200
 * when its handler would be run. */
static int run_twin(request_rec *r, request_rec *t, gdn_twin *out)
{
    request_rec *was = twin;
    const request_rec *asker = twin_asker;
    int status;
    twin = t;
    twin_asker = r;
    twin_stopped = NULL;
    __atomic_add_fetch(&twins_running, 1, __ATOMIC_RELAXED);
    status = twin_post_read_request(t);
    if (status == OK || status == DECLINED) {
        status = ap_process_request_internal(t);
    }
    __atomic_sub_fetch(&twins_running, 1, __ATOMIC_RELAXED);
    out->stopped = twin_stopped;
    twin = was;
    twin_asker = asker;
    if (status == OK) {
        return HTTP_OK;
    }
    return status == DONE || status == DECLINED ? HTTP_FORBIDDEN : status;
}

/* ---- What in a twin's configuration may tell clients apart ---- */

/* The per-directory records of the modules whose rules may tell clients
 * apart, as httpd 2.4 lays them out (modules/aaa/mod_authz_core.c,
 * mod_access_compat.c, modules/mappers/mod_rewrite.c): read, never
 * written, and only their leading fields. They are private to those
 * modules, so they are read only for the module ABI they were written
 * against, and only once `read_back` found a configuration of its own
 * read back as written (else every page is taken as telling clients
 * apart). */

typedef struct authz_section authz_section;
struct authz_section {
    const char *provider_name;
    const char *provider_args;
    const void *provider_parsed_args;
    const void *provider;
    apr_int64_t limited;
    int op;
    int negate;
    int is_merged;
    authz_section *first;
    authz_section *next;
};

typedef struct {
    authz_section *section;
} authz_core_dir;

typedef struct {
    int order[METHODS];
    apr_array_header_t *allows;
    apr_array_header_t *denys;
} access_compat_dir;

typedef struct {
    int state;
    int options;
    apr_array_header_t *rewriteconds;
    apr_array_header_t *rewriterules;
} rewrite_dir;

/* mod_filter's per-directory record (modules/filters/mod_filter.c),
 * read only by the read-back, to find the harness it declared. */
typedef struct {
    apr_hash_t *live_filters;
    const void *chain;
} filter_dir;

typedef struct {
    int state;
    int options;
    apr_hash_t *rewritemaps;
    apr_array_header_t *rewriteconds;
    apr_array_header_t *rewriterules;
} rewrite_server;

#define REWRITE_ENGINE_ENABLED (1 << 1)

/* Why the foreign records are not read (set by the start-up read-back:
 * until then, the configuration is not read). */
static const char *foreign_unread = "the configuration not read yet";

static const authz_core_dir *authz_of(ap_conf_vector_t *v)
{
    const module *m = ap_find_linked_module("mod_authz_core.c");
    return m ? ap_get_module_config(v, m) : NULL;
}

static const access_compat_dir *access_of(ap_conf_vector_t *v)
{
    const module *m = ap_find_linked_module("mod_access_compat.c");
    return m ? ap_get_module_config(v, m) : NULL;
}

static const rewrite_dir *rewrite_of(ap_conf_vector_t *v)
{
    const module *m = ap_find_linked_module("mod_rewrite.c");
    return m ? ap_get_module_config(v, m) : NULL;
}

/* The read-back's own harness and the two core filters it provides, in
 * the order FilterProvider lines add them (each goes first). */
#define READ_BACK_HARNESS "gdn-read-back"
#define READ_BACK_FIRST "CONTENT_LENGTH"
#define READ_BACK_SECOND "OLD_WRITE"

/* Whether the harness the read-back declared with two providers reads
 * back as mod_filter laid it out: its records, then its providers (the
 * last added first), each with its filter and expression. */
static int filter_read_back(ap_conf_vector_t *v)
{
    const module *m = ap_find_linked_module("mod_filter.c");
    const filter_dir *fd = m ? ap_get_module_config(v, m) : NULL;
    const ap_filter_rec_t *frec;
    const struct filter_provider *p;
    if (!fd || !fd->live_filters) {
        return 0;
    }
    frec = apr_hash_get(fd->live_filters, READ_BACK_HARNESS, APR_HASH_KEY_STRING);
    p = frec ? (const struct filter_provider *)frec->providers : NULL;
    return p && p->expr && !p->types
        && p->frec == ap_get_output_filter_handle(READ_BACK_SECOND)
        && p->next && p->next->expr && !p->next->types
        && p->next->frec == ap_get_output_filter_handle(READ_BACK_FIRST)
        && !p->next->next;
}

static int rules_enabled(int state, const apr_array_header_t *rules)
{
    return (state & REWRITE_ENGINE_ENABLED) && rules && rules->nelts > 0;
}

#define AUTHZ_NODES 64

/* `s` and what it holds, in order, into `out` (at most AUTHZ_NODES):
 * the number of nodes, or -1 where there are more. */
static int flatten(apr_pool_t *p, const authz_section *s, gdn_authz_node *out,
                   int n)
{
    const authz_section *c;
    int me = n;
    if (n >= AUTHZ_NODES) {
        return -1;
    }
    out[me].provider = !s->first && s->provider_name
        ? apr_pstrdup(p, s->provider_name) : NULL;
    out[me].args = s->provider_args ? apr_pstrdup(p, s->provider_args) : "";
    out[me].negate = s->negate;
    out[me].get = (s->limited & (AP_METHOD_BIT << M_GET)) != 0;
    out[me].children = 0;
    n++;
    for (c = s->first; c; c = c->next) {
        n = flatten(p, c, out, n);
        if (n < 0) {
            return -1;
        }
        out[me].children++;
    }
    return n;
}

/* The modules whose per-directory record for `t` differs from its
 * server's defaults. httpd makes a section's record for a module only
 * when one of its directives is read there, and a merge keeps the base
 * record where a section has none, so the same pointer means that no
 * section or .htaccess on the path configured the module. */
static void read_sectioned(apr_pool_t *p, request_rec *t, gdn_twin *out)
{
    apr_array_header_t *names = apr_array_make(p, 4, sizeof(const char *));
    module *m;
    for (m = ap_top_module; m; m = m->next) {
        if (ap_get_module_config(t->per_dir_config, m)
            != ap_get_module_config(t->server->lookup_defaults, m)) {
            APR_ARRAY_PUSH(names, const char *) = m->name;
        }
    }
    out->sectioned_count = names->nelts;
    out->sectioned = (const char *const *)names->elts;
}

/* What of the twin `t`'s configuration may tell clients apart, into
 * `out` (strings in `p`, the asking request's pool). */
static void read_client_rules(apr_pool_t *p, request_rec *t, gdn_twin *out)
{
    const core_dir_config *core = ap_get_core_module_config(t->per_dir_config);
    const authz_core_dir *a;
    const access_compat_dir *ac;
    const rewrite_dir *rd;
    const module *rm = ap_find_linked_module("mod_rewrite.c");
    out->unread = foreign_unread;
    out->if_sections = core && core->sec_if && core->sec_if->nelts > 0;
    read_sectioned(p, t, out);
    if (foreign_unread) {
        return;
    }
    a = authz_of(t->per_dir_config);
    if (a && a->section) {
        gdn_authz_node *nodes = apr_pcalloc(p, sizeof(*nodes) * AUTHZ_NODES);
        out->authz_count = flatten(p, a->section, nodes, 0);
        out->authz = nodes;
        if (out->authz_count < 0) {
            out->unread = "an authorization too large to read";
        }
    }
    ac = access_of(t->per_dir_config);
    out->access_rules = ac && ((ac->allows && ac->allows->nelts)
                               || (ac->denys && ac->denys->nelts));
    rd = rewrite_of(t->per_dir_config);
    out->rewrite_rules = rd && rules_enabled(rd->state, rd->rewriterules);
    if (rm) {
        const rewrite_server *s = ap_get_module_config(t->server->module_config, rm);
        out->rewrite_rules |= s && rules_enabled(s->state, s->rewriterules);
    }
}

const char *gdn_client_rules_unread(void)
{
    return foreign_unread;
}

/* A configuration read from a string, for the read-back. */
static apr_status_t text_getc(char *ch, void *param)
{
    const char **at = param;
    if (!**at) {
        return APR_EOF;
    }
    *ch = *(*at)++;
    return APR_SUCCESS;
}

static apr_status_t text_gets(void *buf, apr_size_t size, void *param)
{
    const char **at = param;
    size_t n = strcspn(*at, "\n");
    if (!**at) {
        return APR_EOF;
    }
    if (n >= size) {
        return APR_ENOSPC;
    }
    memcpy(buf, *at, n);
    ((char *)buf)[n] = '\0';
    *at += n + ((*at)[n] == '\n');
    return APR_SUCCESS;
}

static apr_status_t text_close(void *param)
{
    (void)param;
    return APR_SUCCESS;
}

/* Whether the records of a directory configured with `Require all
 * granted`, `Allow from 192.0.2.1`, a rewrite rule and a harness of two
 * providers (for the modules loaded) read back as written. */
static const char *check_read_back(ap_conf_vector_t *v)
{
    const authz_core_dir *a = authz_of(v);
    const access_compat_dir *ac = access_of(v);
    const rewrite_dir *rd = rewrite_of(v);
    if (ap_find_linked_module("mod_authz_core.c")) {
        const authz_section *s = a ? a->section : NULL, *leaf = s ? s->first : NULL;
        if (!leaf || leaf->next || leaf->first || leaf->negate
            || !leaf->provider_name || strcmp(leaf->provider_name, "all")
            || !leaf->provider_args || strcmp(leaf->provider_args, "granted")
            || !(leaf->limited & (AP_METHOD_BIT << M_GET))) {
            return "mod_authz_core's records read back wrong";
        }
    }
    if (ap_find_linked_module("mod_access_compat.c")
        && (!ac || !ac->allows || ac->allows->nelts != 1
            || (ac->denys && ac->denys->nelts))) {
        return "mod_access_compat's records read back wrong";
    }
    if (ap_find_linked_module("mod_rewrite.c")
        && (!rd || !rules_enabled(rd->state, rd->rewriterules)
            || rd->rewriterules->nelts != 1)) {
        return "mod_rewrite's records read back wrong";
    }
    if (ap_find_linked_module("mod_filter.c") && !filter_read_back(v)) {
        return "mod_filter's records read back wrong";
    }
    return NULL;
}

/* Configures a directory of its own through the modules' own directives
 * and reads their records back: NULL when every one reads as written. */
static const char *read_back(apr_pool_t *pconf, server_rec *s)
{
    apr_pool_t *p;
    cmd_parms parms;
    ap_directive_t *tree = NULL;
    const char *text, *at, *err;
    if (!FOREIGN_LAYOUTS) {
        return "a module ABI the foreign records were not written for";
    }
    if (apr_pool_create(&p, pconf) != APR_SUCCESS) {
        return "no pool for the read-back";
    }
    text = apr_pstrcat(p,
        ap_find_linked_module("mod_authz_core.c") ? "Require all granted\n" : "",
        ap_find_linked_module("mod_access_compat.c") ? "Allow from 192.0.2.1\n" : "",
        ap_find_linked_module("mod_rewrite.c") ? "RewriteEngine On\nRewriteRule ^ -\n" : "",
        ap_find_linked_module("mod_filter.c")
            ? "FilterProvider " READ_BACK_HARNESS " " READ_BACK_FIRST " true\n"
              "FilterProvider " READ_BACK_HARNESS " " READ_BACK_SECOND " false\n"
            : "",
        NULL);
    at = text;
    memset(&parms, 0, sizeof(parms));
    parms.pool = p;
    parms.temp_pool = p;
    parms.server = s;
    parms.override = OR_ALL | ACCESS_CONF;
    parms.override_opts = OPT_ALL;
    parms.limited = -1;
    parms.path = "/gdn-read-back/";
    parms.config_file = ap_pcfg_open_custom(p, "the module's read-back", &at,
                                            text_getc, text_gets, text_close);
    err = ap_build_config(&parms, p, p, &tree);
    if (!err) {
        ap_conf_vector_t *v = ap_create_per_dir_config(p);
        err = ap_walk_config(tree, &parms, v);
        if (!err) {
            err = check_read_back(v);
        }
    }
    err = err ? apr_pstrcat(pconf, "the read-back: ", err, NULL) : NULL;
    apr_pool_destroy(p);
    return err;
}

/* A GET for `uri` (escaped, as a request line carries it), which names
 * `path`, asked of Apache as its twin: from this request's client, or,
 * with `anonymous`, from a client no rule knows. Its status (200 when
 * its handler would run on that very file) and what would answer it go
 * to `out`, for the module to judge. */
static int ask_at(request_rec *r, const char *uri, const char *path,
                  int anonymous, gdn_twin *out)
{
    conn_rec *c = r->connection;
    ap_filter_t *o = c->output_filters, *in = c->input_filters;
    request_rec *t;
    int status;
    t = make_twin(r, uri, anonymous);
    if (!t) {
        return out->status = HTTP_FORBIDDEN;
    }
    status = run_twin(r, t, out);
    /* What could answer another client otherwise, which shared caches
     * in front must be told. */
    read_client_rules(r->pool, t, out);
    if (status == HTTP_OK
        && (!t->filename || strcmp(t->filename, path)
            || t->finfo.filetype != APR_REG
            || (t->path_info && *t->path_info))) {
        /* The URI names another file (a rewrite, an alias of one name). */
        status = HTTP_FORBIDDEN;
    }
    if (status == HTTP_OK) {
        read_answer(r, t, out);
        out->found = t->finfo;
        out->options = ap_allow_options(t);
    }
    /* Hooks may have put filters of the twin's on the connection's
     * chains (as a request of its own they were theirs): back as they
     * were, then the twin goes with its pool. */
    c->output_filters = o;
    c->input_filters = in;
    apr_pool_destroy(t->pool);
    return out->status = status;
}

/* `ask_at` for the request's own file plus `suffix`, under the URI a
 * direct request for it would have: the client's query after the suffix
 * (rules read it: a RewriteCond on %{QUERY_STRING}, an <If>); a client no
 * rule knows sends none. */
static int ask(request_rec *r, const char *path, const char *suffix,
               int anonymous, gdn_twin *out)
{
    apr_size_t ul = 0;
    const char *uri = file_uri(r, &ul);
    if (!uri) {
        return out->status = HTTP_FORBIDDEN;
    }
    uri = ap_escape_uri(r->pool,
                        apr_pstrcat(r->pool, apr_pstrndup(r->pool, uri, ul),
                                    suffix, NULL));
    if (!anonymous && r->args) {
        uri = apr_pstrcat(r->pool, uri, "?", r->args, NULL);
    }
    return ask_at(r, uri, path, anonymous, out);
}

static void twin_unknown(gdn_twin *out)
{
    memset(out, 0, sizeof(*out));
    out->status = HTTP_FORBIDDEN;
    out->unread = "the twin not made";
}

int gdn_sibling_ask(request_rec *r, const char *path, const char *suffix,
                    gdn_twin *out)
{
    twin_unknown(out);
    return ask(r, path, suffix, 0, out);
}

int gdn_public_ask(request_rec *r, gdn_twin *out)
{
    twin_unknown(out);
    if (!r->filename) {
        return out->status;
    }
    return ask(r, r->filename, "", 1, out);
}

int gdn_public_ask_at(request_rec *r, const char *uri, const char *path,
                      gdn_twin *out)
{
    twin_unknown(out);
    if (!uri || *uri != '/' || !path || *path != '/') {
        return out->status;
    }
    return ask_at(r, ap_escape_uri(r->pool, uri), path, 1, out);
}
