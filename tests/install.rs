//! `make install` / `make uninstall` as a user meets them: the library
//! (installed from the one this suite tests, INSTALL_FROM=lib_dir()) goes
//! into a temporary prefix, once directly and once staged with DESTDIR;
//! tests/install/consumer.c is built with pkg-config three ways (`--cflags
//! --libs graphcore` run with LD_LIBRARY_PATH, the same with an rpath from
//! `--variable=libdir`, and `graphcore-static` linking libgraphcore.a), and
//! consumer.cpp (graphcore.hpp, graphcore::graphcore) and consumer.c
//! (graphcore::graphcore_static) with CMake's `find_package(graphcore)`;
//! all five run; the Python binding, copied out of the repository, finds
//! the install through pkg-config. Without a driver they must say
//! "no driver mode" with graphcore's message; with one (GC_GPU=1 on the GPU
//! machine) they must do a full run and check its data. Then `make
//! uninstall` must leave no file behind.
//!
//! make, a C and C++ compiler, pkg-config and cmake are required (`make
//! test` installs the last two, scripts/test-deps): a missing one fails the
//! test and names the package to install.

use crate::support::{lib_dir, missing_tool, repo, tool_command};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

const VERSION: &str = env!("CARGO_PKG_VERSION");
const MAJOR: &str = env!("CARGO_PKG_VERSION_MAJOR");

/// The command for `tool` (see support::tool_command); fails with one line
/// saying what to install if it cannot run.
fn tool(name: &str, env: &str, install: &str) -> String {
    let cmd = tool_command(name, env);
    match Command::new(&cmd).arg("--version").output() {
        Ok(o) if o.status.success() => cmd,
        _ => missing_tool(
            &format!("{name} (`{cmd} --version` failed)"),
            &format!("Debian/Ubuntu: apt-get install -y {install}; or set {env} to it"),
        ),
    }
}

/// Runs `cmd`; panics with its output unless it succeeds. Returns stdout.
fn run(cmd: &mut Command) -> String {
    let shown = format!("{cmd:?}");
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot run {shown}: {e}"));
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{shown} failed ({}):\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

/// A fresh folder for one test, removed when the test passes.
struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Scratch {
        let d = std::env::temp_dir().join(format!("graphcore-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        Scratch(d)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

/// `make <target> PREFIX=.. DESTDIR=..` in the repository, installing the
/// library this suite tests.
fn make(target: &str, prefix: &Path, destdir: Option<&Path>) -> String {
    let mut cmd = Command::new(tool("make", "MAKE", "make"));
    cmd.arg("-C")
        .arg(repo())
        .arg("--no-print-directory")
        .arg(target)
        .arg(format!("PREFIX={}", prefix.display()))
        .arg(format!("INSTALL_FROM={}", lib_dir().display()))
        .arg(format!(
            "DESTDIR={}",
            destdir.map(|d| d.display().to_string()).unwrap_or_default()
        ))
        // Not the jobserver of a make that may have started this test.
        .env_remove("MAKEFLAGS")
        .env_remove("MFLAGS")
        .env_remove("MAKELEVEL");
    run(&mut cmd)
}

/// Every file and symbolic link under `root`, relative to it.
fn files_under(root: &Path) -> BTreeSet<String> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeSet<String>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for e in entries {
            let path = e.unwrap().path();
            let meta = std::fs::symlink_metadata(&path).unwrap();
            if meta.is_dir() {
                walk(root, &path, out);
            } else {
                let rel = path.strip_prefix(root).unwrap();
                out.insert(rel.display().to_string());
            }
        }
    }
    let mut out = BTreeSet::new();
    walk(root, root, &mut out);
    out
}

/// What `make install` installs, relative to its root (DESTDIR + PREFIX).
fn expected_files(prefix_rel: &str) -> BTreeSet<String> {
    [
        format!("lib/libgraphcore.so.{VERSION}"),
        format!("lib/libgraphcore.so.{MAJOR}"),
        "lib/libgraphcore.so".into(),
        "lib/libgraphcore.a".into(),
        "include/graphcore.h".into(),
        "include/graphcore_ops.h".into(),
        "include/graphcore.hpp".into(),
        "lib/pkgconfig/graphcore.pc".into(),
        "lib/pkgconfig/graphcore-static.pc".into(),
        "lib/cmake/graphcore/graphcoreConfig.cmake".into(),
        "lib/cmake/graphcore/graphcoreConfigVersion.cmake".into(),
    ]
    .into_iter()
    .map(|f| format!("{prefix_rel}{f}"))
    .collect()
}

/// Checks the installed tree at `root` (= DESTDIR + PREFIX).
fn check_tree(root: &Path, prefix: &Path, destdir: Option<&Path>) {
    let lib = root.join("lib");
    let link = |name: &str| std::fs::read_link(lib.join(name)).unwrap();
    assert_eq!(
        link(&format!("libgraphcore.so.{MAJOR}")),
        PathBuf::from(format!("libgraphcore.so.{VERSION}"))
    );
    assert_eq!(
        link("libgraphcore.so"),
        PathBuf::from(format!("libgraphcore.so.{MAJOR}"))
    );
    let same = |installed: PathBuf, original: PathBuf| {
        assert!(
            std::fs::read(&installed).unwrap() == std::fs::read(&original).unwrap(),
            "{} differs from {}",
            installed.display(),
            original.display()
        );
    };
    same(
        lib.join(format!("libgraphcore.so.{VERSION}")),
        lib_dir().join("libgraphcore.so"),
    );
    same(lib.join("libgraphcore.a"), lib_dir().join("libgraphcore.a"));
    for h in ["graphcore.h", "graphcore_ops.h", "graphcore.hpp"] {
        same(root.join("include").join(h), repo().join("include").join(h));
    }
    let pc = std::fs::read_to_string(lib.join("pkgconfig/graphcore.pc")).unwrap();
    assert!(
        pc.lines()
            .any(|l| l == format!("prefix={}", prefix.display())),
        "graphcore.pc does not name the prefix {}:\n{pc}",
        prefix.display()
    );
    assert!(
        pc.lines().any(|l| l == format!("Version: {VERSION}")),
        "{pc}"
    );
    for f in ["graphcoreConfig.cmake", "graphcoreConfigVersion.cmake"] {
        let text = std::fs::read_to_string(lib.join("cmake/graphcore").join(f)).unwrap();
        assert!(
            text.contains(VERSION),
            "{f} does not name version {VERSION}"
        );
        if let Some(d) = destdir {
            assert!(
                !text.contains(&d.display().to_string()),
                "{f} names DESTDIR {}",
                d.display()
            );
        }
    }
    if let Some(d) = destdir {
        assert!(
            !pc.contains(&d.display().to_string()),
            "graphcore.pc names DESTDIR"
        );
    }
}

/// Runs a consumer program (with LD_LIBRARY_PATH=`ld_path`, or none);
/// checks it did a full run, or (only without GC_GPU) that it reported the
/// missing driver. Returns its last line.
fn run_consumer(exe: &Path, ld_path: Option<&Path>) -> String {
    let mut cmd = Command::new(exe);
    // Without `ld_path` the program must find the library itself (rpath),
    // not through the LD_LIBRARY_PATH cargo gives the suite.
    match ld_path {
        Some(p) => cmd.env("LD_LIBRARY_PATH", p),
        None => cmd.env_remove("LD_LIBRARY_PATH"),
    };
    let out = run(&mut cmd);
    println!("{out}");
    let last = out.lines().last().unwrap_or_default().to_string();
    let name = exe.file_name().unwrap().to_string_lossy().into_owned();
    let full = last.starts_with(&format!("{name}: full run ok"));
    let no_driver = last.starts_with(&format!("{name}: no driver mode: GC_ERROR_NO_DRIVER: "));
    if std::env::var_os("GC_GPU").is_some() {
        assert!(
            full,
            "GC_GPU is set but {name} did not do a full run:\n{out}"
        );
    } else {
        assert!(
            full || no_driver,
            "{name} neither ran nor reported the missing driver:\n{out}"
        );
    }
    last
}

/// The NEEDED entries of an ELF file.
fn needed(exe: &Path) -> Vec<String> {
    let out = run(Command::new("readelf").arg("-d").arg(exe));
    out.lines()
        .filter(|l| l.contains("(NEEDED)"))
        .filter_map(|l| Some(l.split('[').nth(1)?.trim_end_matches(']').to_string()))
        .collect()
}

/// Builds consumer.c with pkg-config and the CMake project against the
/// install at `root` (= DESTDIR + PREFIX; `sysroot` = DESTDIR if staged),
/// and runs the three programs.
fn build_and_run(scratch: &Path, root: &Path, sysroot: Option<&Path>) {
    let pkg_config = tool("pkg-config", "PKG_CONFIG", "pkg-config");
    let cmake = tool("cmake", "CMAKE", "cmake");
    let cc = tool("cc", "CC", "build-essential");
    let src = repo().join("tests/install");

    // C with pkg-config: the .pc names PREFIX; PKG_CONFIG_SYSROOT_DIR maps
    // it into a DESTDIR staging folder.
    let pkg = |args: &[&str]| {
        let mut cmd = Command::new(&pkg_config);
        cmd.args(args)
            .env("PKG_CONFIG_LIBDIR", root.join("lib/pkgconfig"))
            .env_remove("PKG_CONFIG_PATH")
            .env_remove("PKG_CONFIG_SYSROOT_DIR");
        if let Some(s) = sysroot {
            cmd.env("PKG_CONFIG_SYSROOT_DIR", s);
        }
        run(&mut cmd).trim().to_string()
    };
    assert_eq!(pkg(&["--modversion", "graphcore"]), VERSION);
    assert_eq!(pkg(&["--modversion", "graphcore-static"]), VERSION);
    let compile = |exe: &Path, flags: &str| {
        run(Command::new(&cc)
            .args(["-std=c11", "-Wall", "-Wextra", "-Werror", "-pedantic"])
            .arg(src.join("consumer.c"))
            .arg("-o")
            .arg(exe)
            .args(flags.split_whitespace()));
    };
    let flags = pkg(&["--cflags", "--libs", "graphcore"]);
    println!("pkg-config --cflags --libs graphcore: {flags}");
    let want_i = format!("-I{}", root.join("include").display());
    let want_l = format!("-L{}", root.join("lib").display());
    assert!(
        flags.contains(&want_i) && flags.contains(&want_l) && flags.contains("-lgraphcore"),
        "pkg-config gave `{flags}`, expected {want_i} {want_l} -lgraphcore"
    );
    let soname = format!("libgraphcore.so.{MAJOR}");
    let loads_shared = |exe: &Path| {
        assert!(
            needed(exe).contains(&soname),
            "{} does not load {soname}: {:?}",
            exe.display(),
            needed(exe)
        );
    };

    // Shared, found through LD_LIBRARY_PATH at run time.
    let exe = scratch.join("consumer_pkgconfig");
    compile(&exe, &flags);
    loads_shared(&exe);
    run_consumer(&exe, Some(&root.join("lib")));

    // Shared, found through an rpath to pkg-config's libdir (as the README
    // says). The libdir names PREFIX: a staged install is not there, so
    // only the direct install runs without LD_LIBRARY_PATH.
    let libdir = pkg(&["--variable=libdir", "graphcore"]);
    let exe = scratch.join("consumer_rpath");
    compile(&exe, &format!("{flags} -Wl,-rpath,{libdir}"));
    loads_shared(&exe);
    if sysroot.is_none() {
        assert_eq!(Path::new(&libdir), root.join("lib"));
        run_consumer(&exe, None);
    }

    // Static, through graphcore-static.pc: no libgraphcore at run time.
    let flags = pkg(&["--cflags", "--libs", "graphcore-static"]);
    println!("pkg-config --cflags --libs graphcore-static: {flags}");
    let exe = scratch.join("consumer_pkgconfig_static");
    compile(&exe, &flags);
    assert!(
        !needed(&exe).iter().any(|n| n.starts_with("libgraphcore")),
        "consumer_pkgconfig_static loads libgraphcore: {:?}",
        needed(&exe)
    );
    run_consumer(&exe, None);

    // C++ and static C with CMake's find_package(graphcore).
    let build = scratch.join("cmake-build");
    let configure = run(Command::new(&cmake)
        .arg("-S")
        .arg(&src)
        .arg("-B")
        .arg(&build)
        .arg(format!("-DCMAKE_PREFIX_PATH={}", root.display()))
        .arg("-DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF")
        .arg("-DCMAKE_FIND_USE_SYSTEM_PACKAGE_REGISTRY=OFF")
        .arg("-DCMAKE_BUILD_TYPE=Release"));
    let found_in = format!("found in {}", root.join("lib/cmake/graphcore").display());
    assert!(
        configure.contains(&found_in),
        "CMake did not find the package just installed ({found_in}):\n{configure}"
    );
    run(Command::new(&cmake)
        .arg("--build")
        .arg(&build)
        .args(["--parallel", "2"]));
    let cpp = build.join("consumer_cpp");
    loads_shared(&cpp);
    run_consumer(&cpp, None); // CMake's build RPATH finds the library
    let st = build.join("consumer_static");
    assert!(
        !needed(&st).iter().any(|n| n.starts_with("libgraphcore")),
        "consumer_static loads libgraphcore: {:?}",
        needed(&st)
    );
    run_consumer(&st, None);
}

/// `make install DESTDIR=... PREFIX=/opt/...`: a staged install whose files
/// name PREFIX, used from the staging folder, then `make uninstall`.
#[test]
fn install_staged_with_destdir() {
    let scratch = Scratch::new("install-destdir");
    let destdir = scratch.0.join("stage");
    let prefix = PathBuf::from(format!("/opt/graphcore-test-{}", std::process::id()));
    assert!(!prefix.exists());
    make("install", &prefix, Some(&destdir));
    let rel = format!("{}/", prefix.strip_prefix("/").unwrap().display());
    assert_eq!(files_under(&destdir), expected_files(&rel));
    assert!(!prefix.exists(), "the install wrote outside DESTDIR");
    let root = destdir.join(prefix.strip_prefix("/").unwrap());
    check_tree(&root, &prefix, Some(&destdir));
    build_and_run(&scratch.0, &root, Some(&destdir));

    make("uninstall", &prefix, Some(&destdir));
    let left = files_under(&destdir);
    assert!(left.is_empty(), "make uninstall left {left:?}");
}

/// The Python binding as a user meets it after `make install` into a custom
/// prefix and `pip install ./python`: a copy of python/graphcore outside the
/// repository, with PKG_CONFIG_PATH naming the prefix and no GRAPHCORE_LIB
/// or LD_LIBRARY_PATH, loads the installed library (pkg-config's libdir).
fn python_finds_the_install(scratch: &Path, prefix: &Path) {
    let python = tool_command("python3", "PYTHON");
    let site = scratch.join("site");
    let package = site.join("graphcore");
    std::fs::create_dir_all(&package).unwrap();
    for e in std::fs::read_dir(repo().join("python/graphcore")).unwrap() {
        let path = e.unwrap().path();
        if path.extension().is_some_and(|x| x == "py") {
            std::fs::copy(&path, package.join(path.file_name().unwrap())).unwrap();
        }
    }
    let out = run(Command::new(&python)
        .args(["-c", "import graphcore; print(graphcore.LIBRARY)"])
        .current_dir(&site)
        .env("PYTHONPATH", &site)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .env("PKG_CONFIG", tool("pkg-config", "PKG_CONFIG", "pkg-config"))
        .env("PKG_CONFIG_PATH", prefix.join("lib/pkgconfig"))
        .env_remove("PKG_CONFIG_LIBDIR")
        .env_remove("GRAPHCORE_LIB")
        .env_remove("LD_LIBRARY_PATH"));
    assert_eq!(
        Path::new(out.trim()),
        prefix.join(format!("lib/libgraphcore.so.{MAJOR}")),
        "the Python binding did not load the installed library through pkg-config"
    );
}

/// `make install PREFIX=<temporary folder>`: installed twice (a reinstall
/// replaces the files), used from there, then `make uninstall`.
#[test]
fn install_into_prefix() {
    let scratch = Scratch::new("install-prefix");
    let prefix = scratch.0.join("prefix");
    make("install", &prefix, None);
    make("install", &prefix, None);
    assert_eq!(files_under(&prefix), expected_files(""));
    check_tree(&prefix, &prefix, None);
    build_and_run(&scratch.0, &prefix, None);
    python_finds_the_install(&scratch.0, &prefix);

    make("uninstall", &prefix, None);
    let left = files_under(&prefix);
    assert!(left.is_empty(), "make uninstall left {left:?}");
    // Uninstalling again is harmless.
    make("uninstall", &prefix, None);
}
