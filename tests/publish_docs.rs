//! What `gzip-disk-ng-docs` writes: the bash completion, completing in a
//! real bash, and the manual pages, rendered by `man` without warnings,
//! with every option's argument in the synopsis and every directive on
//! the module's page.

mod common;

use common::*;
use mod_gzip_disk_ng::directives::DIRECTIVES;
use std::fs;
use std::path::Path;
use std::process::Command;

/// Writes the docs into a fresh directory.
fn docs() -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_gzip-disk-ng-docs"))
        .arg(d.path())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    d
}

/// What bash offers for the command line `words` (the last is the word
/// being completed), run in `cwd`, through the function the script
/// registers for gzip-disk-ng, and the fallback its spec names.
fn complete(script: &Path, cwd: &Path, words: &[&str]) -> Vec<String> {
    let body = r#"source "$1" || exit 1
f="$(complete -p gzip-disk-ng | sed -n 's/.* -F \([^ ]*\) .*/\1/p')"
shift
COMP_WORDS=("$@")
COMP_CWORD=$(( $# - 1 ))
cur="${COMP_WORDS[COMP_CWORD]}"
"$f" gzip-disk-ng "$cur" "${COMP_WORDS[COMP_CWORD-1]}"
# What bash does when the function offers nothing and the spec says
# -o default: readline's file names.
if [ ${#COMPREPLY[@]} -eq 0 ] && complete -p gzip-disk-ng | grep -q -- '-o default'; then
    COMPREPLY=( $(compgen -o default -- "$cur") )
fi
printf '%s\n' "${COMPREPLY[@]}""#;
    let o = Command::new("bash")
        .current_dir(cwd)
        .args(["-c", body, "-"])
        .arg(script)
        .args(words)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let mut v: Vec<String> = stdout(&o)
        .lines()
        .filter(|l| !l.is_empty())
        .map(str::to_owned)
        .collect();
    v.sort();
    v
}

#[test]
fn bash_completes_each_command_s_options_and_paths() {
    let d = docs();
    let script = d.path().join("bash-completion/gzip-disk-ng");
    let site = tempfile::tempdir().unwrap();
    fs::create_dir(site.path().join("htdocs")).unwrap();
    fs::write(site.path().join("htdocs.conf"), b"").unwrap();
    let here = site.path();

    let top = complete(&script, here, &["gzip-disk-ng", ""]);
    for c in ["compress", "verify", "clean", "train"] {
        assert!(top.contains(&c.to_owned()), "{top:?}");
    }
    let compress = complete(&script, here, &["gzip-disk-ng", "compress", "--"]);
    for o in [
        "--gzip-level",
        "--dry-run",
        "--store",
        "--delta-versions",
        "--help",
    ] {
        assert!(compress.contains(&o.to_owned()), "{o} not in {compress:?}");
    }
    assert!(
        !compress.iter().any(|o| o == "--no-jitter-trailer"),
        "the deprecated option is offered"
    );
    let verify = complete(&script, here, &["gzip-disk-ng", "verify", "--"]);
    assert!(verify.contains(&"--dictionary".to_owned()), "{verify:?}");
    assert!(!verify.contains(&"--gzip-level".to_owned()), "{verify:?}");
    let clean = complete(&script, here, &["gzip-disk-ng", "clean", "--"]);
    for o in ["--dry-run", "--store", "--dictionary", "--quiet"] {
        assert!(clean.contains(&o.to_owned()), "{o} not in {clean:?}");
    }
    // Options that take a value complete only after `--`; a path argument
    // (an option's value, or a PATH) completes to files.
    assert_eq!(
        complete(&script, here, &["gzip-disk-ng", "compress", "-q", "htd"]),
        ["htdocs", "htdocs.conf"]
    );
    assert_eq!(
        complete(
            &script,
            here,
            &["gzip-disk-ng", "verify", "--store", "htdocs."]
        ),
        ["htdocs.conf"]
    );
}

/// `page` rendered by `man`, which must not warn.
fn render(page: &Path) -> String {
    let o = Command::new("man")
        .args(["--warnings", "-l"])
        .arg(page)
        .env("MANWIDTH", "200")
        .output()
        .unwrap();
    assert!(o.status.success(), "man {page:?}: {}", stderr(&o));
    assert!(o.stderr.is_empty(), "man {page:?} warns: {}", stderr(&o));
    stdout(&o)
}

#[test]
fn manual_pages_show_arguments_and_every_directive() {
    if !have("man") {
        skip("man not on PATH: the pages' rendering");
        return;
    }
    let d = docs();
    let man1 = d.path().join("man1");
    let compress = render(&man1.join("gzip-disk-ng-compress.1"));
    let synopsis = compress.split("DESCRIPTION").next().unwrap();
    for want in [
        "[--gzip-level <LEVEL>]",
        "[-j|--jobs <N>]",
        "[--store <DIR>]",
        "[-f|--force]",
        "<PATH>...",
    ] {
        assert!(synopsis.contains(want), "{want} not in {synopsis}");
    }
    assert!(!synopsis.contains("no-jitter-trailer"), "{synopsis}");
    let clean = render(&man1.join("gzip-disk-ng-clean.1"));
    assert!(clean.contains("[-n|--dry-run]"), "{clean}");
    for p in [
        "gzip-disk-ng.1",
        "gzip-disk-ng-verify.1",
        "gzip-disk-ng-train.1",
    ] {
        let page = render(&man1.join(p));
        assert!(page.contains("mod_gzip_disk_ng(8)"), "{p}: {page}");
    }
    let module = render(&d.path().join("man8/mod_gzip_disk_ng.8"));
    for dir in &DIRECTIVES {
        assert!(
            module.contains(dir.name()),
            "{} not on the page",
            dir.name()
        );
        assert!(
            module.contains(dir.syntax),
            "{} not on the page",
            dir.syntax
        );
    }
    let conf = fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/docs/configuration.md"
    ))
    .unwrap();
    let documented = conf
        .lines()
        .filter(|l| l.starts_with("| [GzipDiskNg"))
        .count();
    assert_eq!(documented, DIRECTIVES.len());
}
