//! The first programs a newcomer meets are real: c_examples/hello.c and
//! python/examples/hello.py are compiled (`-std=c11 -Wall -Wextra -Werror
//! -pedantic`) or imported against the library under test and run; README.md
//! and docs/getting-started.md embed them verbatim; every complete program
//! in docs/getting-started.md (a ```c block with `main`, a ```python block
//! importing graphcore) is compiled and run too; and the C and Python
//! fragments of the getting-started and porting guides and python/README.md
//! name only functions the headers declare and attributes the package has.
//!
//! Without a GPU each program must print "no CUDA GPU: skipping" and exit 0;
//! on the GPU machine (GC_GPU=1) it must print its own "ok" line instead.

use crate::support::{lib_dir, missing_tool, repo, tool_command};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const SKIP: &str = "no CUDA GPU: skipping";

/// A fresh folder for this test's files, removed when dropped.
struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Scratch {
        let dir = std::env::temp_dir().join(format!(
            "graphcore-hello-{}-{name}-{:?}",
            std::process::id(),
            std::thread::current().id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Checks a program's run: exit status 0, and the skip message without a
/// GPU or an "ok" line (and no skip) with one.
fn check_run(what: &str, out: &Output) {
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "{what} failed ({}):\n{stdout}\n{stderr}",
        out.status
    );
    let gpu = std::env::var_os("GC_GPU").is_some();
    if stdout.contains(SKIP) {
        assert!(
            !gpu,
            "{what} skipped on the GPU machine (GC_GPU is set):\n{stdout}{stderr}"
        );
    } else {
        assert!(
            stdout.lines().any(|l| l.ends_with(": ok")),
            "{what} printed neither {SKIP:?} nor an \"ok\" line:\n{stdout}{stderr}"
        );
    }
    println!("{what}: {}", stdout.trim_end());
}

/// Compiles the C program `src` with the flags the README promises, links
/// it against the library under test (through a folder holding it under
/// its link name and its SONAME), runs it and checks the run.
fn compile_and_run_c(what: &str, src: &Path, scratch: &Scratch) {
    let libs = scratch.0.join("lib");
    std::fs::create_dir_all(&libs).unwrap();
    let so = lib_dir().join("libgraphcore.so");
    let soname = format!("libgraphcore.so.{}", env!("CARGO_PKG_VERSION_MAJOR"));
    for name in ["libgraphcore.so".to_string(), soname] {
        let link = libs.join(name);
        let _ = std::fs::remove_file(&link);
        std::os::unix::fs::symlink(&so, &link).unwrap();
    }
    let exe = scratch.0.join("program");
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let out = Command::new(&cc)
        .args([
            "-std=c11",
            "-Wall",
            "-Wextra",
            "-Werror",
            "-pedantic",
            "-O1",
        ])
        .arg(format!("-I{}", repo().join("include").display()))
        .arg(src)
        .arg("-o")
        .arg(&exe)
        .arg(format!("-L{}", libs.display()))
        .arg(format!("-Wl,-rpath,{}", libs.display()))
        .arg("-lgraphcore")
        .output()
        .unwrap_or_else(|e| panic!("cannot run {cc}: {e}"));
    assert!(
        out.status.success(),
        "compiling {what} with -Werror -pedantic failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = Command::new(&exe).output().expect("run the program");
    check_run(what, &out);
}

/// The Python interpreter (python3, or $PYTHON).
fn python() -> String {
    let python = tool_command("python3", "PYTHON");
    if let Err(e) = Command::new(&python).arg("--version").output() {
        missing_tool(
            &format!("python3 (cannot run {python}: {e})"),
            "apt-get install -y python3, or set PYTHON",
        );
    }
    python
}

/// A Python command with the package of this checkout and the library
/// under test.
fn python_command(python: &str) -> Command {
    let mut cmd = Command::new(python);
    cmd.current_dir(repo())
        .env("GRAPHCORE_LIB", lib_dir().join("libgraphcore.so"))
        .env("PYTHONPATH", repo().join("python"))
        .env("PYTHONDONTWRITEBYTECODE", "1");
    cmd
}

fn read(rel: &str) -> String {
    std::fs::read_to_string(repo().join(rel)).unwrap_or_else(|e| panic!("read {rel}: {e}"))
}

/// The fenced blocks of a Markdown text in language `lang` (```lang), each
/// the text between the fences, with its final newline.
fn blocks(markdown: &str, lang: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut current: Option<String> = None;
    for line in markdown.split_inclusive('\n') {
        let fence = line.trim_end();
        match current.as_mut() {
            Some(text) if fence.trim_start() == "```" => {
                found.push(std::mem::take(text));
                current = None;
            }
            Some(text) => text.push_str(line),
            None if fence.trim_start() == format!("```{lang}") => current = Some(String::new()),
            None => {}
        }
    }
    found
}

/// Asserts that `doc` holds `file`'s text, whole, as a fenced block.
fn assert_embeds(doc: &str, lang: &str, file: &str) {
    let text = read(file);
    assert!(
        blocks(&read(doc), lang).contains(&text),
        "{doc} must contain {file} verbatim in a ```{lang} block (copy the file's whole text \
         between the fences)"
    );
}

#[test]
fn hello_c_compiles_pedantic_and_runs() {
    let scratch = Scratch::new("c");
    compile_and_run_c(
        "c_examples/hello.c",
        &repo().join("c_examples/hello.c"),
        &scratch,
    );
}

#[test]
fn hello_py_runs() {
    let python = python();
    let out = python_command(&python)
        .arg(repo().join("python/examples/hello.py"))
        .output()
        .expect("run hello.py");
    check_run("python/examples/hello.py", &out);
}

#[test]
fn readme_embeds_hello_c_and_hello_py() {
    assert_embeds("README.md", "c", "c_examples/hello.c");
    assert_embeds("README.md", "python", "python/examples/hello.py");
}

#[test]
fn getting_started_embeds_hello_and_runs_its_programs() {
    let doc = "docs/getting-started.md";
    assert_embeds(doc, "c", "c_examples/hello.c");
    assert_embeds(doc, "python", "python/examples/hello.py");
    let text = read(doc);
    let c: Vec<String> = blocks(&text, "c")
        .into_iter()
        .filter(|b| b.contains("int main("))
        .collect();
    assert!(c.len() >= 2, "{doc}: expected hello.c and the built graph");
    for (i, program) in c.iter().enumerate() {
        let scratch = Scratch::new(&format!("doc-c{i}"));
        let src = scratch.0.join("program.c");
        std::fs::write(&src, program).unwrap();
        compile_and_run_c(&format!("{doc}, C program {}", i + 1), &src, &scratch);
    }
    let python = python();
    let py: Vec<String> = blocks(&text, "python")
        .into_iter()
        .filter(|b| b.contains("import graphcore"))
        .collect();
    assert!(
        py.len() >= 2,
        "{doc}: expected hello.py and the built graph"
    );
    for (i, program) in py.iter().enumerate() {
        let out = python_command(&python)
            .args(["-c", program])
            .output()
            .expect("run python");
        check_run(&format!("{doc}, Python program {}", i + 1), &out);
    }
}

/// The words of `text` that start with `prefix` and go on with [A-Za-z0-9_]
/// (whole words only: "xgc_a" is not one), without the prefix.
fn names_after(text: &str, prefix: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find(prefix) {
        let before = rest[..at].chars().next_back();
        let after = &rest[at + prefix.len()..];
        let len = after
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(after.len());
        if !before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.') && len > 0 {
            names.push(after[..len].to_string());
        }
        rest = &after[len..];
    }
    names.sort();
    names.dedup();
    names
}

/// The guides' code is the API's: every `gc_*` / `GC_*` name in their C
/// blocks is declared by a header, and every `gc.<name>` in their Python
/// blocks is an attribute of the graphcore package.
#[test]
fn hello_guides_name_only_real_api() {
    let docs = [
        "docs/getting-started.md",
        "docs/porting-from-torch-cuda-graph.md",
        "python/README.md",
    ];
    let mut headers = String::new();
    for entry in std::fs::read_dir(repo().join("include")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "h") {
            headers += &std::fs::read_to_string(&path).unwrap();
        }
    }
    let declared_words = |prefix: &str| names_after(&headers, prefix);
    let (lower, upper) = (declared_words("gc_"), declared_words("GC_"));
    let mut missing = Vec::new();
    let mut attrs = Vec::new();
    for doc in docs {
        let text = read(doc);
        for block in blocks(&text, "c") {
            for name in names_after(&block, "gc_") {
                if lower.binary_search(&name).is_err() {
                    missing.push(format!("{doc}: gc_{name}"));
                }
            }
            for name in names_after(&block, "GC_") {
                if upper.binary_search(&name).is_err() {
                    missing.push(format!("{doc}: GC_{name}"));
                }
            }
        }
        for block in blocks(&text, "python") {
            attrs.extend(names_after(&block, "gc.").into_iter().map(|a| (doc, a)));
        }
    }
    assert!(
        missing.is_empty(),
        "C names the headers do not declare: {missing:?}"
    );
    attrs.sort();
    attrs.dedup();
    let list: Vec<&str> = attrs.iter().map(|(_, a)| a.as_str()).collect();
    let out = python_command(&python())
        .args([
            "-c",
            "import sys, graphcore\nfor a in sys.argv[1:]:\n    \
             if not hasattr(graphcore, a):\n        print(a)\n",
        ])
        .args(&list)
        .output()
        .expect("run python");
    assert!(
        out.status.success(),
        "python: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The script prints each name the package lacks on a line of its own.
    let stdout = String::from_utf8_lossy(&out.stdout);
    let lacking: Vec<&str> = stdout.lines().collect();
    let absent: Vec<String> = attrs
        .iter()
        .filter(|(_, a)| lacking.contains(&a.as_str()))
        .map(|(doc, a)| format!("{doc}: gc.{a}"))
        .collect();
    assert!(
        absent.is_empty(),
        "Python names the package does not have: {absent:?}"
    );
}
