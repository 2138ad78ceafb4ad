//! `gzip-disk-ng-docs OUT`: writes the manual pages of `gzip-disk-ng`
//! (OUT/man1/gzip-disk-ng.1 and one per command, gzip-disk-ng-compress.1
//! …) and its bash completion (OUT/bash-completion/gzip-disk-ng) from the
//! command line the tool itself parses (`publish::cli`), and the module's
//! page, OUT/man8/mod_gzip_disk_ng.8, from its directive table
//! (`directives`). `gzip-disk-ng-docs --directive-table` prints that
//! table as docs/configuration.md carries it.
//!
//! A binary of its own, built with the tool by `cargo build --release` and
//! run by scripts/lib.sh's `build`, rather than:
//! - build.rs: it runs before the library it would need the definitions
//!   from is compiled (the CLI lives in crates/cli);
//! - a hidden subcommand of the tool: clap_complete completes hidden
//!   subcommands, so it would show up in the completion it writes, and
//!   every installed tool would carry the generators;
//! - an example: examples build with all the dev-dependencies (proptest,
//!   tempfile), which a release build has no other use for.
//!
//! It is not installed: the packages carry what it writes.

use clap_mangen::Man;
use gdn_cli::publish::cli::{self, NAME};
use mod_gzip_disk_ng::directives;
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
    refs.push("\\fBmod_gzip_disk_ng\\fR(8)".to_owned());
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

/// `s` as roff text: hyphens as `\-`, which renders as the minus sign
/// options are typed with.
fn roff(s: &str) -> String {
    s.replace('\\', "\\e").replace('-', "\\-")
}

/// The SYNOPSIS section of `cmd`'s page, each option with its argument
/// (`[--gzip-level <LEVEL>]`), as `--help` shows them: clap_mangen 0.3
/// (the newest) names the options alone.
fn synopsis(cmd: &clap::Command) -> String {
    let name = cmd.get_bin_name().unwrap_or(cmd.get_name());
    let mut words = vec![format!("\\fB{}\\fR", roff(name))];
    let visible: Vec<&clap::Arg> = cmd.get_arguments().filter(|a| !a.is_hide_set()).collect();
    for a in visible.iter().filter(|a| !a.is_positional()) {
        let flag = match (a.get_short(), a.get_long()) {
            (Some(s), Some(l)) => format!("\\fB\\-{s}\\fR|\\fB\\-\\-{}\\fR", roff(l)),
            (Some(s), None) => format!("\\fB\\-{s}\\fR"),
            (None, Some(l)) => format!("\\fB\\-\\-{}\\fR", roff(l)),
            (None, None) => continue,
        };
        let takes = a.get_num_args().is_some_and(|n| n.takes_values());
        let value = match a.get_value_names() {
            Some(v) if takes => format!("\\ \\fI<{}>\\fR", roff(&v.join(" "))),
            _ => String::new(),
        };
        // \% keeps roff from hyphenating an option's name.
        words.push(format!("\\%{}", bracketed(a, format!("{flag}{value}"))));
    }
    for a in visible.iter().filter(|a| a.is_positional()) {
        let v = match a.get_value_names() {
            Some(v) => v.join(" "),
            None => a.get_id().as_str().to_uppercase(),
        };
        let many = a.get_num_args().is_some_and(|n| n.max_values() > 1);
        let dots = if many { "..." } else { "" };
        let v = bracketed(a, format!("\\fI{}\\fR", roff(&v)));
        words.push(format!("\\%{v}{dots}"));
    }
    if visible_subcommands(cmd).next().is_some() {
        words.push("<\\fICOMMAND\\fR>".to_owned());
    }
    format!(".SH SYNOPSIS\n.ad l\n{}\n.ad b\n", words.join(" "))
}

/// `text` in `[…]` for an optional argument, `<…>` for a required
/// positional one.
fn bracketed(a: &clap::Arg, text: String) -> String {
    match (a.is_required_set(), a.is_positional()) {
        (false, _) => format!("[{text}]"),
        (true, true) => format!("<{text}>"),
        (true, false) => text,
    }
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
    w.write_all(synopsis(sub).as_bytes())?;
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
    let man8 = out.join("man8");
    fs::create_dir_all(&man8)?;
    let module = directives::man_page(env!("CARGO_PKG_VERSION"));
    fs::write(man8.join("mod_gzip_disk_ng.8"), module)?;
    for sub in visible_subcommands(&cmd) {
        page(&man1, sub, &cmd)?;
    }
    let mut file = File::create(completion.join(NAME))?;
    let mut complete = for_completion(&cli::command(), &NAME.replace('-', "__"));
    clap_complete::generate(clap_complete::Shell::Bash, &mut complete, NAME, &mut file);
    file.sync_all()
}

/// `cmd` as bash is to complete it, whose bin name as the completion
/// script's dispatch loop spells it is `fn_name`. clap_complete 4.6 (the
/// newest) offers hidden (deprecated) options, and spells the case labels
/// of a hyphenated tool's commands otherwise than that loop (its
/// `gzip__subcmd__disk__subcmd__ng__subcmd__compress` against
/// `gzip__disk__ng__subcmd__compress`: clap-rs/clap#6421), so nothing
/// after a command completes. So the copy leaves hidden arguments and
/// commands out, and names each command `fn_name` and its path: the
/// labels are then spelt as the loop spells them.
fn for_completion(cmd: &clap::Command, fn_name: &str) -> clap::Command {
    let mut c = clap::Command::new(cmd.get_name().to_owned())
        .disable_help_subcommand(true)
        .args(cmd.get_arguments().filter(|a| !a.is_hide_set()).cloned());
    if let Some(v) = cmd.get_version() {
        c = c.version(v.to_owned());
    }
    for sub in visible_subcommands(cmd) {
        let name = format!("{fn_name} {}", sub.get_name());
        c = c.subcommand(for_completion(sub, &name).bin_name(name));
    }
    c
}

fn main() -> ExitCode {
    let Some(out) = std::env::args_os().nth(1) else {
        eprintln!("usage: gzip-disk-ng-docs OUT_DIR | --directive-table");
        return ExitCode::from(2);
    };
    if out == "--directive-table" {
        print!("{}", directives::markdown_table());
        return ExitCode::SUCCESS;
    }
    match generate(Path::new(&out)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("gzip-disk-ng-docs: {}: {e}", Path::new(&out).display());
            ExitCode::FAILURE
        }
    }
}
