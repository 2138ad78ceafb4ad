//! The `gzip_disk_ng_module` httpd loads: its directives, configuration
//! types and hooks, built on the `httpd` layer's module blocks.

use crate::config::{self, DirConfig, ServerConfig, Settings};
use crate::directives::DIRECTIVES;
use crate::handler;
use crate::metrics::counters;
use crate::ondemand::cache;
use crate::site;
use crate::status;
use crate::store_guard;
use gdn_core::jitter::Secret;
use gdn_httpd::{self, Command, Hook, Order, PostConfig, Request, Status};
use std::ffi::CStr;
use std::sync::{PoisonError, RwLock};

/// The module, as `LoadModule gzip_disk_ng_module …` names it.
pub struct GzipDiskNg;

gdn_httpd::declare_module!(gzip_disk_ng_module, GzipDiskNg);

/// httpd's command table, made from the one directive table the manual
/// pages and docs are made from too; each entry dispatches to its row's
/// setter.
static COMMANDS: [Command; DIRECTIVES.len() + 1] = {
    let mut table = [Command::END; DIRECTIVES.len() + 1];
    let mut i = 0;
    while i < DIRECTIVES.len() {
        table[i] = Command::new::<GzipDiskNg>(&DIRECTIVES[i]);
        i += 1;
    }
    table
};

impl gdn_httpd::Module for GzipDiskNg {
    type Dir = DirConfig;
    type Server = ServerConfig;
    const NAME: &'static CStr = c"mod_gzip_disk_ng.c";
    const COMMANDS: &'static [Command] = &COMMANDS;
    const HOOKS: &'static [Hook] = &[
        Hook::Handler(Order::Middle),
        // Last, so mod_dir's DirectoryIndex fixup sees what it would
        // otherwise miss only after every other module had its say.
        Hook::Fixups(Order::Last),
        Hook::InsertErrorFilter(Order::Middle),
        Hook::PostConfig(Order::Middle),
        Hook::CheckConfig(Order::Middle),
        Hook::Status(Order::Middle),
        Hook::OutputFilter(crate::filter::NAME, crate::filter::CODER),
        Hook::OutputFilter(crate::filter::NOT_MODIFIED, crate::filter::REFRESHER),
    ];

    fn record() -> &'static gdn_httpd::module::ModuleRecord {
        &gzip_disk_ng_module
    }

    fn handler(req: &Request<'_>) -> Status {
        status::route(req)
            .or_else(|| site::route(req, site_dictionary(req)))
            .unwrap_or_else(|| handler::handle(req, || settings(req)))
    }

    fn fixups(req: &Request<'_>) -> Status {
        if let Some(st) = store_guard::refuse_request(req) {
            return st;
        }
        handler::fixup::fixup(req, || dir_config(req))
    }

    fn output_filter(
        which: u8,
        f: &mut gdn_httpd::Filter<'_>,
        input: &mut gdn_httpd::Input,
    ) -> gdn_httpd::apr_status_t {
        let settings = settings(f.request());
        crate::filter::filter(which, f, input, &settings)
    }

    fn output_filter_init(_which: u8, req: &Request<'_>, place: &gdn_httpd::module::FilterPlace) {
        crate::filter::init(req, place, &settings(req))
    }

    fn insert_error_filter(req: &Request<'_>) {
        handler::error_vary::insert_error_filter(req)
    }

    /// Reads the parsed configuration once per (re)start, before the
    /// children fork: whether siblings' names may be judged by sections
    /// alone or are asked of Apache, and the start-up padding key.
    fn post_config(ctx: &PostConfig<'_>) -> Result<(), String> {
        crate::policy::learn(ctx);
        store_guard::guard(
            ctx.server_config::<GzipDiskNg>()
                .and_then(|c| c.cache_root.as_deref()),
        );
        let secret = make_startup_secret(gdn_httpd::random_bytes)?;
        *STARTUP_SECRET
            .write()
            .unwrap_or_else(PoisonError::into_inner) = Some(Box::leak(Box::new(secret)));
        // Before the compressor and the children fork: the types the
        // on-demand rule reads, from the system's mime.types, once.
        gdn_compressor::key::types();
        // Before the compressor forks: it counts too.
        counters::attach(ctx);
        // Before the children fork: a sibling verified by one is
        // verified for all.
        crate::memo::verified::attach(ctx);
        // Before the children fork: slow readers of decoded bodies are
        // bounded for the whole server.
        crate::respond::streams::attach(ctx);
        cache::start(ctx, ctx.server_config::<GzipDiskNg>());
        Ok(())
    }

    fn status(req: &Request<'_>, short: bool) {
        status::section(req, short)
    }

    fn twin_gate(gate: &gdn_httpd::TwinGate<'_>) -> Option<&'static CStr> {
        crate::policy::stop_before_access(gate.on_tls(), |m| gate.records_differ(m))
    }

    /// The on-demand cache must not be served (also under `apache2 -t`);
    /// a root the server's user cannot use is a warning, on the console
    /// in the first pass (`apache2 -t`, `apache2ctl start`), as Apache
    /// warns of a missing `DocumentRoot`: the rest of the site still
    /// starts.
    fn check_config(ctx: &PostConfig<'_>) -> Result<(), String> {
        check_delta_stores(ctx)?;
        let Some(root) = ctx
            .server_config::<GzipDiskNg>()
            .and_then(|c| c.cache_root.as_ref())
        else {
            warn_site_dictionary_without_cache(ctx);
            return Ok(());
        };
        config::check_cache_root_served(root, &ctx.document_roots())?;
        let warnings = config::check_cache_root_mapped(
            root,
            &crate::policy::url_mappings(&ctx.configuration()),
        )?;
        if ctx.dry_run() {
            for why in warnings {
                ctx.log().log(gdn_httpd::Level::Warn, &why);
            }
            if let Some(why) = cache::unusable(root) {
                ctx.log().log(gdn_httpd::Level::Warn, &why);
            }
        }
        Ok(())
    }
}

/// No `GzipDiskNgDeltaStore` may be served: each is refused inside any
/// `DocumentRoot` (also under `apache2 -t`).
fn check_delta_stores(ctx: &PostConfig<'_>) -> Result<(), String> {
    let roots = ctx.document_roots();
    for c in ctx.server_configs::<GzipDiskNg>() {
        for s in c.delta_stores.iter().flatten() {
            config::check_delta_store_served(s.dir(), &roots)?;
        }
    }
    Ok(())
}

/// `GzipDiskNgSiteDictionary` without a cache root does nothing: said on
/// the console in the first pass, as the cache root's own warnings are.
fn warn_site_dictionary_without_cache(ctx: &PostConfig<'_>) {
    let set = ctx
        .server_configs::<GzipDiskNg>()
        .iter()
        .find_map(|c| c.site_dictionary.as_deref());
    if let (Some(path), true) = (set, ctx.dry_run()) {
        let why = format!(
            "GzipDiskNgSiteDictionary {path} has no effect without GzipDiskNgCacheRoot: \
             the site dictionary is trained by the on-demand compressor"
        );
        ctx.log().log(gdn_httpd::Level::Warn, &why);
    }
}

/// What the configuration says for a request: its directory settings and,
/// where jitter is on, the key for keyed lengths.
fn settings<'r>(req: &Request<'r>) -> Settings<'r> {
    let dir = dir_config(req);
    let server = req.server_config::<GzipDiskNg>();
    Settings {
        dir,
        secret: dir.jitter().and_then(|_| jitter_secret(req)),
        site_dictionary: server.and_then(|c| c.site_dictionary.as_deref()),
        site_period: server.map_or(config::DEFAULT_SITE_DICTIONARY_PERIOD, |c| {
            c.site_dictionary_period()
        }),
        delta_stores: server
            .and_then(|c| c.delta_stores.as_deref())
            .unwrap_or_default(),
    }
}

/// The virtual host's `GzipDiskNgSiteDictionary`.
fn site_dictionary<'r>(req: &Request<'r>) -> Option<&'r str> {
    req.server_config::<GzipDiskNg>()
        .and_then(|c| c.site_dictionary.as_deref())
}

/// The request's directory settings (the defaults where no scope set any).
fn dir_config<'r>(req: &Request<'r>) -> &'r DirConfig {
    static DEFAULT: DirConfig = DirConfig {
        encodings: None,
        decompress: None,
        status_header: None,
        jitter: None,
        use_as_dictionary: None,
        on_demand: None,
        delta_versions: None,
        filter_levels: None,
        filter_min_size: None,
        filter_load_limit: None,
    };
    req.dir_config::<GzipDiskNg>().unwrap_or(&DEFAULT)
}

/// The key for jitter lengths: this server's `GzipDiskNgJitterKey`, else
/// the random key made at start-up.
fn jitter_secret<'r>(req: &Request<'r>) -> Option<&'r Secret> {
    req.server_config::<GzipDiskNg>()
        .and_then(|c| c.jitter_key.as_ref())
        .or_else(|| startup_secret())
}

/// The padding key of servers without `GzipDiskNgJitterKey`: random,
/// made each time the configuration is read, in the parent before the
/// children fork, so every child pads alike and a restart (graceful or
/// not) makes a new one. Records are leaked (a few hundred bytes per
/// restart) so requests hold plain references.
static STARTUP_SECRET: RwLock<Option<&'static Secret>> = RwLock::new(None);

fn startup_secret() -> Option<&'static Secret> {
    *STARTUP_SECRET
        .read()
        .unwrap_or_else(PoisonError::into_inner)
}

/// A start-up key from `random`, or why there is none: a key made of
/// anything else (time, pid) could be guessed, and padding keyed by it
/// would hide nothing, so the server does not start.
fn make_startup_secret(random: impl FnOnce(&mut [u8]) -> bool) -> Result<Secret, String> {
    let mut key = [0u8; 32];
    if !random(&mut key) {
        return Err(
            "mod_gzip_disk_ng: the random source (APR, /dev/urandom) failed: \
                    no key for jitter padding; not starting"
                .into(),
        );
    }
    Ok(Secret::new(&key))
}

#[cfg(test)]
mod tests {
    use super::make_startup_secret;

    #[test]
    fn a_failed_random_source_refuses_to_start() {
        let e = make_startup_secret(|_| false).unwrap_err();
        assert!(
            e.starts_with("mod_gzip_disk_ng:") && e.contains("random"),
            "{e}"
        );
        let bytes = |fill: u8| {
            move |b: &mut [u8]| {
                b.fill(fill);
                true
            }
        };
        let (a, b) = (make_startup_secret(bytes(1)), make_startup_secret(bytes(2)));
        assert_ne!(
            a.unwrap().id(),
            b.unwrap().id(),
            "the key is the random bytes"
        );
    }
}
