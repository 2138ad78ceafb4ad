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
int gdn_log_enabled(const request_rec *r, int module_index, int level);
void gdn_log_r(const request_rec *r, int module_index, int level,
               apr_status_t status, const char *msg);
apr_status_t gdn_open_for_send(request_rec *r, const char *path,
                               apr_file_t **fd);
int gdn_sendfile_enabled(request_rec *r);
void gdn_insert_file(request_rec *r, apr_bucket_brigade *bb, apr_file_t *fd,
                     apr_off_t start, apr_off_t len);
void *gdn_module_config(ap_conf_vector_t *cv, const module *m);
void *gdn_request_state(const request_rec *r, int module_index);
void gdn_set_request_state(request_rec *r, int module_index, void *value);

/* Whether a sibling name of a request's file would be served (access.c). */
void gdn_scan_config(apr_pool_t *pconf, server_rec *main_server);
const char *gdn_short_answer_refused(const request_rec *r);
const char *gdn_server_refusal(const server_rec *s);
int gdn_sibling_rules_may_differ(request_rec *r, const char *suffix);
/* Regex sections that are a literal prefix, learned once (literal.c). */
void gdn_learn_literal_sections(apr_pool_t *pconf, server_rec *main_server);
int gdn_literal_prefix_matches(const ap_regex_t *r, const char *name, size_t nl);
/* The length of the literal `r` was learned as, or 0. */
size_t gdn_literal_prefix_length(const ap_regex_t *r);
int gdn_sibling_ask(request_rec *r, const char *path, const char *suffix,
                    apr_finfo_t *found, const char **refusal, int *options,
                    int *client);
int gdn_in_sibling_check(const request_rec *r);
int gdn_public_ask(request_rec *r, const char **refusal);
int gdn_public_ask_at(request_rec *r, const char *uri, const char *path,
                      const char **refusal);
const char *gdn_content_filter(const request_rec *r);
void gdn_skip_compressors(request_rec *r);
void gdn_register_sibling_hooks(void);

void gdn_log_s(const server_rec *s, int module_index, int level,
               apr_status_t status, const char *msg);
const char *gdn_document_root(server_rec *s);
/* "Directive	target" lines, one per Alias, AliasMatch, ScriptAlias,
 * ScriptAliasMatch and UserDir of the configuration (access.c). */
const char *gdn_url_mappings(apr_pool_t *p);
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
