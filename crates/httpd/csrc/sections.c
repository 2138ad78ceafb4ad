/* Core's sections as the configuration holds them, read for the module's
 * policy (which judges them): a server's <Files>, regex <Directory> and
 * <Location> lists, a request's merged <Files> list and what else its
 * per-directory configuration holds (<If>, .htaccess rules), each
 * section's pattern, compiled regex and wildcard flag, and a regex run.
 * Read, never written; nothing here decides. */
#include "httpd.h"
#include "http_config.h"
#include "http_core.h"
#include "apr_fnmatch.h"
#include "shim.h"

int gdn_sections_count(const apr_array_header_t *secs)
{
    return secs ? secs->nelts : 0;
}

void gdn_section_at(const apr_array_header_t *secs, int i, gdn_section *out)
{
    const core_dir_config *e =
        ap_get_core_module_config(((ap_conf_vector_t **)secs->elts)[i]);
    out->regex = e->r;
    out->pattern = e->d;
    out->wildcard = e->d_is_fnmatch ? 1 : 0;
    out->nested = e->sec_file != secs ? e->sec_file : NULL;
}

void gdn_read_server_sections(const server_rec *s, gdn_server_sections *out)
{
    const core_server_config *sc = ap_get_core_module_config(s->module_config);
    const core_dir_config *d = ap_get_core_module_config(s->lookup_defaults);
    out->files = d ? d->sec_file : NULL;
    out->dirs = sc->sec_dir;
    out->locations = sc->sec_url;
}

void gdn_read_dir_sections(const request_rec *r, gdn_dir_sections *out)
{
    const core_dir_config *d = ap_get_core_module_config(r->per_dir_config);
    out->files = d->sec_file;
    out->if_sections = d->sec_if ? d->sec_if->nelts : 0;
    out->authcfg_override = (d->override & OR_AUTHCFG) ? 1 : 0;
    out->override_list =
        d->override_list && !apr_is_empty_table(d->override_list);
}

int gdn_regex_matches(const void *regex, const char *name)
{
    return ap_regexec(regex, name, 0, NULL, 0) == 0;
}

int gdn_wildcard_matches(const char *pattern, const char *name)
{
    return apr_fnmatch(pattern, name, APR_FNM_PATHNAME) == APR_SUCCESS;
}
