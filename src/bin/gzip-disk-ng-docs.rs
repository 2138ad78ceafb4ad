//! `gzip-disk-ng-docs OUT`: writes the manual pages of `gzip-disk-ng`
//! (OUT/man1/gzip-disk-ng.1 and one per command, gzip-disk-ng-compress.1
//! …) and its bash completion (OUT/bash-completion/gzip-disk-ng) from the
//! command line the tool itself parses (`publish::cli`).
//!
//! A binary of its own, built with the tool by `cargo build --release` and
//! run by scripts/lib.sh's `build`, rather than:
//! - build.rs: it runs before the library it would need the definitions
//!   from is compiled (the CLI lives in the library);
//! - a hidden subcommand of the tool: clap_complete completes hidden
//!   subcommands, so it would show up in the completion it writes, and
//!   every installed tool would carry the generators;
//! - an example: examples build with all the dev-dependencies (proptest,
//!   tempfile), which a release build has no other use for.
//!
//! It is not installed: the packages carry what it writes.

use clap_mangen::Man;
use mod_gzip_disk_ng::publish::cli::{self, NAME};
use std::fs::{self, File};
use std::io::{self, BufWriter, Write};
use std::path::Path;
use std::process::ExitCode;

const EXIT_STATUS: &str = r#".SH "EXIT STATUS"
.TP
0
Everything went well.
.TP
1
compress or verify: a file had a problem. It is reported with its path, and the other files are still processed.
.TP
2
Bad usage, or the command could not run (for train, any failure).
"#;

/// The SEE ALSO section of the page of `page`, naming the other pages.
fn see_also(page: &str, cmd: &clap::Command) -> String {
    let mut refs: Vec<String> = std::iter::once(NAME.to_owned())
        .chain(visible_subcommands(cmd).map(|s| format!("{NAME}-{}", s.get_name())))
        .filter(|r| r != page)
        .map(|r| format!("\\fB{r}\\fR(1)"))
        .collect();
    refs.extend(["gzip", "brotli", "zstd"].map(|r| format!("\\fB{r}\\fR(1)")));
    refs.push("\\fBapache2\\fR(8)".to_owned());
    format!(
        ".SH \"SEE ALSO\"\n{}\n.PP\nThe module's directives and how it serves the siblings: \
         /etc/apache2/mods\\-available/gzip_disk_ng.conf and, in the package, \
         /usr/share/doc/libapache2\\-mod\\-gzip\\-disk\\-ng/.\n",
        refs.join(",\n")
    )
}

fn visible_subcommands(cmd: &clap::Command) -> impl Iterator<Item = &clap::Command> {
    cmd.get_subcommands().filter(|s| !s.is_hide_set())
}

/// One page: clap_mangen's sections, then EXIT STATUS and SEE ALSO, then
/// the version (the top page only).
fn page(out: &Path, sub: &clap::Command, top: &clap::Command) -> io::Result<()> {
    let man = Man::new(sub.clone())
        .manual("gzip-disk-ng manual")
        .source(format!("{NAME} {}", env!("CARGO_PKG_VERSION")));
    let path = out.join(man.get_filename());
    let mut w = BufWriter::new(File::create(&path)?);
    man.render_title(&mut w)?;
    man.render_name_section(&mut w)?;
    man.render_synopsis_section(&mut w)?;
    man.render_description_section(&mut w)?;
    man.render_options_section(&mut w)?;
    if visible_subcommands(sub).next().is_some() {
        man.render_subcommands_section(&mut w)?;
    }
    w.write_all(EXIT_STATUS.as_bytes())?;
    let name = sub.get_display_name().unwrap_or(sub.get_name());
    w.write_all(see_also(name, top).as_bytes())?;
    if sub.get_long_version().is_some() {
        man.render_version_section(&mut w)?;
    }
    w.into_inner().map_err(|e| e.into_error())?.sync_all()
}

fn generate(out: &Path) -> io::Result<()> {
    let mut cmd = cli::command().disable_help_subcommand(true);
    cmd.build();
    let man1 = out.join("man1");
    let completion = out.join("bash-completion");
    for dir in [&man1, &completion] {
        fs::create_dir_all(dir)?;
    }
    page(&man1, &cmd, &cmd)?;
    for sub in visible_subcommands(&cmd) {
        page(&man1, sub, &cmd)?;
    }
    let mut file = File::create(completion.join(NAME))?;
    clap_complete::generate(clap_complete::Shell::Bash, &mut cmd, NAME, &mut file);
    file.sync_all()
}

fn main() -> ExitCode {
    let Some(out) = std::env::args_os().nth(1) else {
        eprintln!("usage: gzip-disk-ng-docs OUT_DIR");
        return ExitCode::from(2);
    };
    match generate(Path::new(&out)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("gzip-disk-ng-docs: {}: {e}", Path::new(&out).display());
            ExitCode::FAILURE
        }
    }
}
