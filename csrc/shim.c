/* The APR ring and httpd config/log macros, as functions Rust can call. */
#include "httpd.h"
#include "http_config.h"
#include "http_core.h"
#include "http_log.h"
#include "apr_buckets.h"
#include "shim.h"

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

void gdn_log_s(const server_rec *s, int module_index, int level,
               apr_status_t status, const char *msg)
{
    ap_log_error_("mod_gzip_disk_ng", 0, module_index, level, status, s,
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

void gdn_set_module_config(ap_conf_vector_t *cv, const module *m, void *val)
{
    ap_set_module_config(cv, m, val);
}
