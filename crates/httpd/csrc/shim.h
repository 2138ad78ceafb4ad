/* Entry points for what httpd and APR only offer as macros. */
#ifndef GDN_SHIM_H
#define GDN_SHIM_H
#include "httpd.h"
#include "http_config.h"
#include "apr_buckets.h"

void gdn_brigade_insert_tail(apr_bucket_brigade *bb, apr_bucket *b);
apr_bucket *gdn_brigade_first(apr_bucket_brigade *bb);
int gdn_bucket_kind(const apr_bucket *b);
apr_status_t gdn_bucket_read(apr_bucket *b, const char **data, apr_size_t *len,
                             int block);
int gdn_status_is_eagain(apr_status_t st);
void gdn_bucket_delete(apr_bucket *b);
void gdn_bucket_move(apr_bucket *b, apr_bucket_brigade *to);
int gdn_idle_workers(void);
apr_file_t *gdn_brigade_whole_file(apr_bucket_brigade *bb, apr_off_t *len);
int gdn_log_enabled(const request_rec *r, int module_index, int level);
void gdn_log_r(const request_rec *r, int module_index, int level,
               apr_status_t status, const char *msg);
apr_status_t gdn_open_for_send(request_rec *r, const char *path,
                               apr_file_t **fd);
int gdn_sendfile_enabled(request_rec *r);
int gdn_etag_bits(const request_rec *r);
void gdn_insert_file(request_rec *r, apr_bucket_brigade *bb, apr_file_t *fd,
                     apr_off_t start, apr_off_t len);
void *gdn_module_config(ap_conf_vector_t *cv, const module *m);
void *gdn_request_state(const request_rec *r, int module_index);
void gdn_set_request_state(request_rec *r, int module_index, void *value);

/* What the module judged of the configuration at post_config: whether
 * request headers may be edited after they are read, the output
 * filters that leave a response's content as it is (each with the
 * module that registers it, and its kind: 0 passes the bytes, 1 a
 * compressor, 2 a coder a handler gives way to), and what a mod_filter
 * harness is: starting from `harness_start`, `harness[k * 4 + p]` is
 * the kind after a provider of kind p, the providers before it of kind
 * k (by access.c's FILTER_* numbers, 0 unknown); the modules whose
 * post_read_request hook only records a request it is given (a log),
 * which a twin, no client's request, does not run; the least severe
 * level a twin's hooks write (-1: as the configuration has it). Copied;
 * the caller keeps its own. */
typedef struct {
    int headers_edited;
    int filters;
    const char *const *filter_names;
    const char *const *filter_modules;
    const int *filter_kinds;
    const int *harness;
    int harness_start;
    int recorders;
    const char *const *recorder_modules;
    int twin_log_level;
} gdn_sibling_rules;
void gdn_scan_config(apr_pool_t *pconf, server_rec *main_server,
                     const gdn_sibling_rules *rules);
/* Why the records of the modules whose rules tell clients apart are not
 * read (the start-up read-back failed, or an ABI they were not written
 * for); NULL when they are. */
const char *gdn_client_rules_unread(void);
/* The module names registered on a request hook, each ended by "\n"
 * (empty for an unnamed entry); NULL for a hook not known here. */
const char *gdn_hook_modules(apr_pool_t *p, const char *hook);
/* One node of an authorization (mod_authz_core's sections), in order, a
 * section's children after it: a leaf's provider and arguments, whether
 * it is negated and applies to GET, a section's number of children. */
typedef struct {
    const char *provider;
    const char *args;
    int negate;
    int get;
    int children;
} gdn_authz_node;
/* What a twin came to: its status (200 when its handler would run on the
 * very file asked for), and then its handler, type and first content
 * filter that may change its bytes, the file and its Options. Always,
 * what of its configuration may tell clients apart: <If> sections, its
 * authorization, Allow/Deny and rewrite rules; `unread` says why those
 * records were not read (NULL: they were); the modules configured per
 * directory on its path. Strings are the asking
 * request's pool's. */
typedef struct {
    int status;
    const char *handler;
    const char *handler_before; /* before core's SetHandler replaced it */
    const char *content_type;
    const char *filter;
    apr_finfo_t found;
    int options;
    const char *unread;
    int if_sections;
    int access_rules;
    int rewrite_rules;
    int authz_count;
    const gdn_authz_node *authz;
    /* The modules (by their source names) whose per-directory record for
     * the twin is not its server's default: a section on its path, or an
     * .htaccess, holds one of their directives. */
    int sectioned_count;
    const char *const *sectioned;
    /* Why it was stopped before its access hooks, or NULL (static). */
    const char *stopped;
} gdn_twin;
/* Core's sections, read (sections.c). */
typedef struct {
    const void *regex;      /* the compiled regex, or NULL */
    const char *pattern;    /* the name, path or pattern as written */
    int wildcard;           /* a name with * ? or [ (apr_fnmatch) */
    const apr_array_header_t *nested; /* its own <Files>, or NULL */
} gdn_section;
typedef struct {
    const apr_array_header_t *files;
    const apr_array_header_t *dirs;
    const apr_array_header_t *locations;
} gdn_server_sections;
typedef struct {
    const apr_array_header_t *files;
    int if_sections;
    int authcfg_override;
    int override_list;
} gdn_dir_sections;
int gdn_sections_count(const apr_array_header_t *secs);
void gdn_section_at(const apr_array_header_t *secs, int i, gdn_section *out);
void gdn_read_server_sections(const server_rec *s, gdn_server_sections *out);
void gdn_read_dir_sections(const request_rec *r, gdn_dir_sections *out);
int gdn_regex_matches(const void *regex, const char *name);
int gdn_wildcard_matches(const char *pattern, const char *name);
int gdn_sibling_ask(request_rec *r, const char *path, const char *suffix,
                    gdn_twin *out);
int gdn_in_sibling_check(const request_rec *r);
int gdn_public_ask(request_rec *r, gdn_twin *out);
int gdn_public_ask_at(request_rec *r, const char *uri, const char *path,
                      gdn_twin *out);
const char *gdn_content_filter(const request_rec *r);
void gdn_skip_compressors(request_rec *r);
void gdn_filter_before_compressors(ap_filter_t *f);
void gdn_register_sibling_hooks(void);
/* Why a twin stops before its access hooks (a static string), or NULL. */
typedef const char *(*gdn_twin_gate_fn)(request_rec *twin,
                                        const request_rec *asker);
void gdn_set_twin_gate(gdn_twin_gate_fn gate);
int gdn_conn_is_tls(const request_rec *r);
int gdn_records_differ(const request_rec *a, const request_rec *b,
                       const char *module_name);
/* The handler `r` had before core's SetHandler fixup replaced it, or
 * NULL. */
const char *gdn_handler_before_override(const request_rec *r);
/* Runs the handler hooks again with `handler` as the request's. */
int gdn_run_handler_as(request_rec *r, const char *handler);

void gdn_log_s(const server_rec *s, int module_index, int level,
               apr_status_t status, const char *msg);
const char *gdn_document_root(server_rec *s);
int gdn_config_dry_run(void);

/* A helper process started by the parent after the configuration is read,
 * restarted when it dies, ended with the configuration pool (stop and
 * restart). `main` runs in it, as Apache's User, with its end of a
 * private message channel; children send on the other end. */
typedef void (*gdn_helper_main)(int fd, server_rec *s, void *arg);
typedef struct gdn_helper gdn_helper;
gdn_helper *gdn_helper_start(apr_pool_t *pconf, server_rec *s, int module_index,
                             const char *name, int nice, gdn_helper_main main,
                             void *arg);
int gdn_helper_channel(const gdn_helper *h);
int gdn_helper_pid(const gdn_helper *h);

/* mod_status's section hook (see mod_status.h). */
typedef int (*gdn_status_fn)(request_rec *r, int flags);
void gdn_hook_status(gdn_status_fn fn, int order);
int gdn_status_is_short(int flags);
void *gdn_shared_memory(server_rec *s, int module_index, const char *key, apr_size_t size,
                        int *fresh);
#endif
