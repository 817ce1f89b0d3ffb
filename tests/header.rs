//! include/graphcore.h (the runtime) and include/graphcore_ops.h (the
//! built-in ops) are generated from ffi/ and committed; this test
//! regenerates both and fails on any difference. `make header` (GC_BLESS=1)
//! rewrites them.
//!
//! cbindgen emits the items grouped by kind (constants, types, functions);
//! [`generate`] regroups them into sections by object, in [`HEADERS`]
//! order: each section opens with a banner (its title and the `//!` docs of
//! its ffi/src files) and holds the files' items in source order. The
//! runtime header includes the ops header at its end (and the ops header
//! includes the runtime header), so a program that includes either gets
//! both. The other tests here hold the headers to their contract: every
//! function lists its statuses, every status named is real, the text is
//! plain ASCII.

use crate::support::repo;
use graphcore_core::ErrorKind;
use graphcore_kernels::{Arg, KERNELS};
use std::collections::HashMap;

/// One section of the header: its title and the ffi/src files whose items
/// (and `//!` docs, as the banner) it holds. A module split over a folder
/// lists its `mod.rs` and then each file of the folder: the banner takes
/// the `//!` docs of `mod.rs` only (a submodule's docs are for readers of
/// the Rust code).
struct Section {
    title: &'static str,
    files: &'static [&'static str],
}

/// The runtime header's sections, in order.
const RUNTIME_SECTIONS: &[Section] = &[
    Section {
        title: "Status and version",
        files: &["status.rs", "version.rs"],
    },
    Section {
        title: "Device and context",
        files: &["context.rs"],
    },
    Section {
        title: "Stream",
        files: &["stream.rs"],
    },
    Section {
        title: "Event",
        files: &["event.rs"],
    },
    Section {
        title: "Pool",
        files: &["pool.rs"],
    },
    Section {
        title: "Allocator (pluggable alloc and free over pools)",
        files: &["alloc.rs"],
    },
    Section {
        title: "Host memory and copies",
        files: &["memory.rs"],
    },
    Section {
        title: "Module and function",
        files: &["module.rs"],
    },
    Section {
        title: "Launch",
        files: &["launch.rs"],
    },
    Section {
        title: "Capture",
        files: &["capture.rs"],
    },
    Section {
        title: "Graph",
        files: &["graph.rs"],
    },
    Section {
        title: "Conditional nodes (device-side control flow)",
        files: &["conditional.rs"],
    },
    Section {
        title: "Exec",
        files: &["exec.rs"],
    },
    Section {
        title: "Runner",
        files: &["runner.rs"],
    },
    Section {
        title: "Cache (graphs keyed by bytes, under a budget)",
        files: &["cache.rs"],
    },
];

/// The ops header's sections, in order.
const OPS_SECTIONS: &[Section] = &[Section {
    title: "Built-in ops",
    files: &[
        "ops/mod.rs",
        "ops/elementwise.rs",
        "ops/linear.rs",
        "ops/vendor.rs",
        "ops/loss.rs",
        "ops/mlp.rs",
        "ops/step.rs",
    ],
}];

/// One generated header: its path in the repository, its include guard,
/// its sections, and what comes before its first section (after the
/// include guard) and after its last (before the guard's end).
pub(crate) struct Header {
    pub(crate) path: &'static str,
    guard: &'static str,
    sections: &'static [Section],
}

/// The generated headers. The first takes cbindgen's prelude (file comment,
/// include guard, includes) and declares the handle types.
pub(crate) const HEADERS: &[Header] = &[
    Header {
        path: "include/graphcore.h",
        guard: "GRAPHCORE_H",
        sections: RUNTIME_SECTIONS,
    },
    Header {
        path: "include/graphcore_ops.h",
        guard: "GRAPHCORE_OPS_H",
        sections: OPS_SECTIONS,
    },
];

/// The file comment and includes of include/graphcore_ops.h.
const OPS_PRELUDE: &str = "/*
 * graphcore: a CUDA Graph runtime - the built-in ops of libgraphcore.so
 * (the typed gc_op_* launches of graphcore's own kernels, and the list of
 * those kernels for gc_kernel_builtin).
 *
 * Generated from ffi/src/ops/ by cbindgen (ffi/cbindgen.toml) and
 * tests/header.rs; do not edit. Regenerate with `make header`.
 *
 * graphcore.h includes this header at its end, and this header includes
 * graphcore.h first, so a program may include either (or both, in any
 * order). The conventions, the statuses and the handle types are
 * graphcore.h's.
 */

#ifndef GRAPHCORE_OPS_H
#define GRAPHCORE_OPS_H

#include \"graphcore.h\"";

/// The section that also lists the built-in kernels.
const BUILTINS_SECTION: &str = "Built-in ops";

/// The C type of pointer parameter `param` of built-in kernel `k`, as its
/// CUDA source declares it (kernels/<module>.cu; the table's `Ptr` says
/// only "a device pointer"): `float *`, `void *` for a workspace, or
/// `uint32_t *` for the conditional setters' u32 values and counters.
fn pointer_c_type(k: &graphcore_kernels::KernelInfo, param: &str) -> &'static str {
    let module = graphcore_kernels::MODULES[k.module].name;
    let src = std::fs::read_to_string(repo().join(format!("kernels/{module}.cu")))
        .expect("kernel source");
    let head = src
        .split("extern \"C\" __global__")
        .skip(1)
        .find_map(|d| {
            let at = d.find(&format!("{}(", k.name))?;
            (!d[..at].contains(['{', ';'])).then(|| {
                let start = at + k.name.len() + 1;
                d[start..start + d[start..].find(')').expect("a parameter list")].to_string()
            })
        })
        .unwrap_or_else(|| panic!("{} is not defined in kernels/{module}.cu", k.name));
    let decl = head
        .split(',')
        .map(|p| p.split_whitespace().collect::<Vec<_>>().join(" "))
        .find(|p| p.rsplit([' ', '*']).next() == Some(param))
        .unwrap_or_else(|| panic!("{}: no parameter {param} in its C source", k.name));
    let base = decl
        .trim_end_matches(param)
        .replace("const", "")
        .replace(['*', ' '], "");
    match base.as_str() {
        "float" => "float *",
        "void" => "void *",
        "unsignedint" | "unsigned" | "u32" => "uint32_t *",
        other => panic!("{}: pointer parameter {param} of type {other}", k.name),
    }
}

/// The "Built-in kernels" list: every kernel of the table with its
/// parameters, so the header documents what gc_kernel_builtin returns.
fn builtin_list() -> String {
    let mut s = String::from(
        "/*\n * Built-in kernels (gc_kernel_builtin names and their parameters, in order;\n \
         * pass them to gc_launch or gc_graph_add_kernel as void *args[]):\n *\n",
    );
    for k in KERNELS {
        let params: Vec<String> = k
            .args
            .iter()
            .map(|(name, a)| {
                let ty = match a {
                    Arg::Ptr => pointer_c_type(k, name),
                    Arg::F32 => "float ",
                    Arg::U32 => "uint32_t ",
                    Arg::I32 => "int32_t ",
                    Arg::U64 => "uint64_t ",
                };
                format!("{ty}{name}")
            })
            .collect();
        s.push_str(&format!(" * {}({})\n", k.name, params.join(", ")));
        for line in k.doc.lines() {
            for part in wrap(line.trim(), 72) {
                s.push_str(&format!(" *     {part}\n").replace(" \n", "\n"));
            }
        }
    }
    s.push_str(" */");
    s
}

/// `text` in lines of at most `width` characters (longer words stay whole).
fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut lines = vec![String::new()];
    for word in text.split_whitespace() {
        let line = lines.last_mut().unwrap();
        if !line.is_empty() && line.len() + 1 + word.len() > width {
            lines.push(word.to_string());
        } else {
            if !line.is_empty() {
                line.push(' ');
            }
            line.push_str(word);
        }
    }
    lines
}

/// The exported items an ffi/src file declares, in source order (top-level
/// `pub` functions, structs, enums, type aliases and constants), and its
/// `//!` module docs for the banner (none for a file of a folder other than
/// its `mod.rs`, see [`Section`]).
fn scan(file: &str) -> (Vec<String>, Vec<String>) {
    let text = std::fs::read_to_string(repo().join("ffi/src").join(file)).unwrap();
    let banner_docs = !file.contains('/') || file.ends_with("/mod.rs");
    let docs = text
        .lines()
        .take_while(|l| banner_docs && l.starts_with("//!"))
        .map(|l| l.trim_start_matches("//!").trim_start().to_string())
        .collect();
    let mut names = Vec::new();
    for line in text.lines() {
        let rest = [
            "pub extern \"C\" fn ",
            "pub struct ",
            "pub enum ",
            "pub type ",
            "pub const ",
        ]
        .iter()
        .find_map(|p| line.strip_prefix(p));
        if let Some(rest) = rest {
            let end = rest
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(rest.len());
            names.push(rest[..end].to_string());
        }
    }
    (names, docs)
}

/// The name an item of cbindgen's output declares (`decl` without its doc
/// comment).
fn declared_name(decl: &str) -> String {
    let ident_end = |s: &str| {
        s.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(s.len())
    };
    if let Some(rest) = decl.strip_prefix("#define ") {
        return rest[..ident_end(rest)].to_string();
    }
    let first = decl.lines().next().unwrap_or_default();
    if let Some(i) = first.find("(*") {
        let rest = &first[i + 2..];
        return rest[..ident_end(rest)].to_string();
    }
    if decl.starts_with("typedef") {
        let last = decl
            .lines()
            .last()
            .unwrap_or_default()
            .trim_end_matches(';');
        return last
            .rsplit([' ', '}'])
            .next()
            .unwrap_or_default()
            .to_string();
    }
    let head = &decl[..decl.find('(').unwrap_or(decl.len())];
    head.rsplit([' ', '*'])
        .next()
        .unwrap_or_default()
        .to_string()
}

/// A chunk of cbindgen's output split into its doc comment and declaration.
fn split_doc(chunk: &str) -> (String, String) {
    let (mut doc, mut decl) = (Vec::new(), Vec::new());
    for line in chunk.lines() {
        let t = line.trim_start();
        if decl.is_empty() && (t.starts_with("/**") || t.starts_with("* ") || t == "*" || t == "*/")
        {
            doc.push(line);
        } else {
            decl.push(line);
        }
    }
    (doc.join("\n"), decl.join("\n"))
}

/// A banner comment: the section's title and its files' module docs.
fn banner(title: &str, docs: &[String]) -> String {
    let rule = "=".repeat(74);
    let mut s = format!("/* {rule}\n * {title}\n *\n");
    for line in docs {
        if line.is_empty() {
            s.push_str(" *\n");
        } else {
            s.push_str(&format!(" * {line}\n"));
        }
    }
    s.push_str(&format!(" * {rule} */"));
    s
}

/// The `.rs` files under `dir`, as paths relative to it prefixed with
/// `prefix` (`/`-separated), folders included.
fn rust_files(dir: &std::path::Path, prefix: &str) -> Vec<String> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let entry = entry.unwrap();
        let name = format!("{prefix}{}", entry.file_name().to_string_lossy());
        if entry.file_type().unwrap().is_dir() {
            files.extend(rust_files(&entry.path(), &format!("{name}/")));
        } else if name.ends_with(".rs") {
            files.push(name);
        }
    }
    files
}

/// The headers as the current sources generate them: each of [`HEADERS`]'s
/// paths with its text.
pub(crate) fn generate() -> Vec<(&'static str, String)> {
    let root = repo();
    let config = cbindgen::Config::from_file(root.join("ffi/cbindgen.toml")).unwrap();
    let bindings = cbindgen::Builder::new()
        .with_config(config)
        .with_src(root.join("ffi/src/lib.rs"))
        .generate()
        .expect("cbindgen failed");
    let mut out = Vec::new();
    bindings.write(&mut out);
    let raw = String::from_utf8(out).unwrap();

    // cbindgen's items by name; what precedes the first item is the prelude
    // (the file comment, the include guard, the includes).
    let mut prelude = Vec::new();
    let mut items: HashMap<String, String> = HashMap::new();
    let mut opaque = Vec::new();
    for chunk in raw.split("\n\n").map(|c| c.trim_matches('\n')) {
        let (_, decl) = split_doc(chunk);
        let structural = decl.is_empty()
            || decl.starts_with("/*")
            || decl.starts_with("#if")
            || decl.starts_with("#endif")
            || decl.starts_with("#include")
            || decl.starts_with("#define GRAPHCORE_H")
            || decl.starts_with("}  // extern");
        if structural {
            if items.is_empty() && !decl.starts_with("#ifdef __cplusplus") {
                prelude.push(chunk.to_string());
            }
            continue;
        }
        let name = declared_name(&decl);
        if decl == format!("typedef struct {name} {name};") {
            opaque.push(name.clone());
        }
        assert!(
            items.insert(name.clone(), chunk.to_string()).is_none(),
            "cbindgen declares `{name}` twice"
        );
    }

    let mut files_with_items: Vec<String> = rust_files(&root.join("ffi/src"), "")
        .into_iter()
        .filter(|f| !scan(f).0.is_empty())
        .collect();
    files_with_items.sort();
    for f in &files_with_items {
        assert!(
            HEADERS
                .iter()
                .flat_map(|h| h.sections)
                .any(|s| s.files.contains(&f.as_str())),
            "ffi/src/{f} exports items but no section of tests/header.rs's HEADERS lists it"
        );
    }

    let mut headers = Vec::new();
    for (i, header) in HEADERS.iter().enumerate() {
        let mut h = if i == 0 {
            let mut h = prelude.join("\n\n");
            h.push_str(
                "\n\n/* The handle types, declared first so every section may name them (each is\n \
                 * documented in its own section). */\n",
            );
            for name in &opaque {
                h.push_str(&format!("struct {name};\n"));
            }
            h
        } else {
            format!("{OPS_PRELUDE}\n")
        };
        h.push_str("\n#ifdef __cplusplus\nextern \"C\" {\n#endif // __cplusplus\n");
        for section in header.sections {
            let mut docs: Vec<String> = Vec::new();
            let mut names = Vec::new();
            for f in section.files {
                let (n, d) = scan(f);
                if !docs.is_empty() && !d.is_empty() {
                    docs.push(String::new());
                }
                docs.extend(d);
                names.extend(n);
            }
            h.push_str(&format!("\n{}\n", banner(section.title, &docs)));
            for name in names {
                let item = items
                    .remove(&name)
                    .unwrap_or_else(|| panic!("cbindgen did not declare `{name}`"));
                h.push_str(&format!("\n{item}\n"));
            }
            if section.title == BUILTINS_SECTION {
                h.push_str(&format!("\n{}\n", builtin_list()));
            }
        }
        h.push_str("\n#ifdef __cplusplus\n}  // extern \"C\"\n#endif  // __cplusplus\n");
        if i == 0 {
            for other in &HEADERS[1..] {
                let file = other.path.rsplit('/').next().unwrap();
                h.push_str(&format!(
                    "\n/* The built-in ops: their own header, which needs the declarations above. */\n\
                     #include \"{file}\"\n"
                ));
            }
        }
        h.push_str(&format!("\n#endif  /* {} */\n", header.guard));
        headers.push((header.path, h));
    }
    let mut left: Vec<_> = items.keys().collect();
    left.sort();
    assert!(left.is_empty(), "items in no section: {left:?}");
    headers
}

/// Every generated header's text, one after another (for the checks that
/// hold for all of them).
fn generate_all() -> String {
    generate()
        .into_iter()
        .map(|(_, text)| text)
        .collect::<Vec<_>>()
        .join("\n")
}

/// The first and last line of a block that [`status_blocks`] generates.
const STATUS_BEGIN: &str = "BEGIN generated statuses: from core/src/error.rs's one status list, by";
const STATUS_END: &str = "END generated statuses";

/// The blocks generated from core's one status list (`error_kinds!` in
/// core/src/error.rs): each file with its block's text, markers included.
/// ffi/src/status.rs: the C enum gc_status (which cbindgen must see written
/// out) and its mapping from ErrorKind; python/graphcore/errors.py: the
/// table of status names.
fn status_blocks() -> Vec<(&'static str, String)> {
    let doc_lines =
        |k: &ErrorKind| -> Vec<String> { k.doc().lines().map(|l| l.trim().to_string()).collect() };
    let name = |k: &ErrorKind| k.status_name().to_str().unwrap().to_string();

    let mut rs = format!(
        "// {STATUS_BEGIN}\n// tests/header.rs (`make header`); do not edit.\n\n\
         /// The result of every fallible call. The values are stable: new codes are\n\
         /// only ever added, never renumbered.\n\
         #[repr(C)]\n#[derive(Clone, Copy, Debug, PartialEq, Eq)]\npub enum gc_status {{\n    \
         /// The call succeeded.\n    GC_SUCCESS = 0,\n"
    );
    for k in ErrorKind::ALL {
        for line in doc_lines(k) {
            rs.push_str(&format!("    /// {line}\n"));
        }
        rs.push_str(&format!("    {} = {},\n", name(k), *k as i32));
    }
    rs.push_str(
        "}\n\nimpl From<ErrorKind> for gc_status {\n    /// The status of the same value.\n    \
         fn from(k: ErrorKind) -> Self {\n        match k {\n",
    );
    for k in ErrorKind::ALL {
        rs.push_str(&format!(
            "            ErrorKind::{k:?} => gc_status::{},\n",
            name(k)
        ));
    }
    rs.push_str(&format!("        }}\n    }}\n}}\n// {STATUS_END}"));

    let mut py = format!(
        "# {STATUS_BEGIN}\n# tests/header.rs (`make header`); do not edit.\n\
         SUCCESS = 0\nSTATUS_NAMES = {{\n    0: \"GC_SUCCESS\",\n"
    );
    for k in ErrorKind::ALL {
        py.push_str(&format!("    {}: \"{}\",\n", *k as i32, name(k)));
    }
    py.push_str(&format!("}}\n# {STATUS_END}"));
    vec![
        ("ffi/src/status.rs", rs),
        ("python/graphcore/errors.py", py),
    ]
}

/// `text` with its generated status block (from the line holding
/// STATUS_BEGIN to the end of the line holding STATUS_END) replaced by
/// `block`.
fn with_status_block(rel: &str, text: &str, block: &str) -> String {
    let begin = text
        .find(STATUS_BEGIN)
        .and_then(|i| text[..i].rfind('\n').map(|j| j + 1))
        .unwrap_or_else(|| panic!("{rel} has no line with `{STATUS_BEGIN}`"));
    let end = text[begin..]
        .find(STATUS_END)
        .map(|i| begin + i + STATUS_END.len())
        .unwrap_or_else(|| panic!("{rel} has no line with `{STATUS_END}`"));
    format!("{}{block}{}", &text[..begin], &text[end..])
}

/// The status blocks are current: the generated parts of ffi/src/status.rs
/// and python/graphcore/errors.py are what core's status list generates.
/// Run before the headers (which cbindgen makes from ffi/src/status.rs).
fn check_status_blocks(bless: bool, stale: &mut Vec<String>) {
    for (rel, block) in status_blocks() {
        let path = repo().join(rel);
        let text = std::fs::read_to_string(&path).unwrap();
        let fresh = with_status_block(rel, &text, &block);
        if fresh != text {
            if bless {
                std::fs::write(&path, &fresh).unwrap();
            } else {
                stale.push(format!("{rel} (its generated status block)"));
            }
        }
    }
}

/// The kernel list types a pointer parameter as the kernel's CUDA source
/// does: the conditional setters read and write u32s (their value, counter,
/// rows and sizes), not floats, as the list once said.
#[test]
fn the_kernel_list_types_pointers_as_the_sources_do() {
    let header = generate_all();
    for want in [
        "gc_cond_set_u32(uint64_t handle, uint32_t *value)",
        "gc_cond_count(uint64_t handle, uint32_t *counter, uint32_t limit)",
        "uint32_t cmp, uint32_t *counter, uint32_t limit)",
        "gc_cond_set_bucket(uint64_t handle, uint32_t *rows, uint32_t *sizes, uint32_t count)",
        "float *pred, float *target, uint64_t n, float grad_scale, void *workspace)",
    ] {
        assert!(header.contains(want), "the kernel list lacks `{want}`");
    }
}

#[test]
fn header_is_current() {
    let bless = std::env::var_os("GC_BLESS").is_some();
    let mut stale = Vec::new();
    check_status_blocks(bless, &mut stale);
    for (rel, fresh) in generate() {
        let path = repo().join(rel);
        if bless {
            std::fs::write(&path, &fresh).unwrap();
            continue;
        }
        let committed = std::fs::read_to_string(&path).unwrap_or_default();
        if committed != fresh {
            let first = committed
                .lines()
                .zip(fresh.lines())
                .position(|(a, b)| a != b)
                .unwrap_or(committed.lines().count().min(fresh.lines().count()));
            stale.push(format!("{rel} (first at line {})", first + 1));
        }
    }
    assert!(
        stale.is_empty(),
        "generated files differ from what core/src/error.rs and ffi/ generate: {}; \
         run `make header`",
        stale.join(", ")
    );
}

/// python/graphcore/errors.py has one exception class per status of core's
/// list: `class <Kind>Error(Error...)` with `code = <value>`, each in
/// ERRORS, and no class with a code that is no status.
#[test]
fn python_exceptions_match_the_status_list() {
    let text = std::fs::read_to_string(repo().join("python/graphcore/errors.py")).unwrap();
    let mut classes: Vec<(String, i32)> = Vec::new();
    let mut current: Option<String> = None;
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("class ") {
            let end = rest.find(['(', ':']).unwrap_or(rest.len());
            let bases = &rest[end..];
            current = (bases.starts_with("(Error")).then(|| rest[..end].to_string());
        } else if let (Some(class), Some(v)) = (&current, line.trim().strip_prefix("code = ")) {
            classes.push((class.clone(), v.parse().expect("code = <integer>")));
            current = None;
        }
    }
    let want: Vec<(String, i32)> = ErrorKind::ALL
        .iter()
        .map(|k| (format!("{k:?}Error"), *k as i32))
        .collect();
    assert_eq!(
        classes, want,
        "python/graphcore/errors.py's exception classes (name, code) vs core's status list"
    );
    let errors = &text[text.find("ERRORS = {").expect("ERRORS = {")..];
    let errors = &errors[..errors.find("\n}").unwrap()];
    for (class, _) in &want {
        assert!(
            errors.contains(&format!("{class},")),
            "{class} is missing from errors.py's ERRORS"
        );
        assert!(
            text.contains(&format!("\"{class}\"")),
            "{class} is missing from errors.py's __all__"
        );
    }
}

/// A function of a header: its name, its doc comment's text (comment
/// markers removed, one string per line) and the `Common errors:`
/// paragraph that an `Errors: common` list of its section means.
struct FunctionDoc {
    name: String,
    lines: Vec<String>,
    common: Option<String>,
}

/// The paragraph of a comment (`/*` or `/**`, markers removed, one string
/// per line) that starts with `start`, joined into one line.
fn paragraph(lines: &[String], start: &str) -> Option<String> {
    let i = lines.iter().position(|l| l.starts_with(start))?;
    Some(
        lines[i..]
            .iter()
            .take_while(|l| !l.is_empty())
            .cloned()
            .collect::<Vec<_>>()
            .join(" "),
    )
}

/// A comment's lines without their comment markers.
fn comment_lines(comment: &str) -> Vec<String> {
    comment
        .lines()
        .map(|l| {
            let t = l.trim_start();
            t.trim_start_matches("/*")
                .trim_start_matches('*')
                .trim_end_matches("*/")
                .trim_matches(|c| c == '=' || c == ' ')
                .to_string()
        })
        .collect()
}

/// Every function of the generated headers with its doc and its section's
/// common errors: the banner's own `Common errors:` paragraph, else the one
/// of the status section (the first banner of graphcore.h), which holds
/// for the whole API.
fn function_docs(headers: &[(&str, String)]) -> Vec<FunctionDoc> {
    let is_banner = |c: &str| c.starts_with("/* ====");
    let global = headers[0]
        .1
        .split("\n\n")
        .map(|c| c.trim_matches('\n'))
        .find(|c| is_banner(c))
        .and_then(|c| paragraph(&comment_lines(c), "Common errors:"));
    let mut out = Vec::new();
    for (_, header) in headers {
        let mut common = global.clone();
        for chunk in header.split("\n\n") {
            let chunk = chunk.trim_matches('\n');
            if is_banner(chunk) {
                common = paragraph(&comment_lines(chunk), "Common errors:").or(global.clone());
                continue;
            }
            let (doc, decl) = split_doc(chunk);
            let decl = decl.trim();
            if decl.starts_with('#') || decl.starts_with("typedef") || !decl.contains('(') {
                continue;
            }
            if decl.starts_with("/*") || decl.starts_with("struct ") {
                continue;
            }
            let lines = doc
                .lines()
                .map(|l| {
                    let t = l.trim_start();
                    t.trim_start_matches("/**")
                        .trim_start_matches("*/")
                        .trim_start_matches('*')
                        .trim()
                        .to_string()
                })
                .collect();
            out.push(FunctionDoc {
                name: declared_name(decl),
                lines,
                common: common.clone(),
            });
        }
    }
    out
}

/// The gc_status constants the header declares.
fn status_names(header: &str) -> Vec<String> {
    let start = header
        .find("typedef enum gc_status {")
        .expect("enum gc_status");
    let end = start + header[start..].find("} gc_status;").unwrap();
    header[start..end]
        .lines()
        .filter_map(|l| {
            let t = l.trim();
            t.starts_with("GC_")
                .then(|| t[..t.find(' ').unwrap_or(t.len())].to_string())
        })
        .collect()
}

/// Every `GC_ERROR_*`/`GC_SUCCESS`-like word in `text` (words starting
/// with `GC_ERROR_`).
fn error_words(text: &str) -> Vec<&str> {
    text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|w| w.starts_with("GC_ERROR_"))
        .collect()
}

/// Every exported function's doc has an `Errors:` paragraph (from a line
/// starting with `Errors:` to the next empty line) that is `Errors: none.`,
/// names at least one status, or starts with `Errors: common`: then its
/// statuses are its section's common errors (a banner's `Common errors:`
/// paragraph, its own or the status section's, which must name statuses)
/// and those it names. Every GC_ERROR_* named anywhere in the headers is a
/// real gc_status. And the common errors stay stated once: no status with
/// the same reason, spelled out at length, recurs in the lists of more
/// than three functions.
#[test]
fn every_function_lists_its_statuses() {
    let headers = generate();
    let header = generate_all();
    let statuses = status_names(&header);
    assert!(statuses.len() >= 15, "parsed {statuses:?}");
    let unknown: Vec<&str> = error_words(&header)
        .into_iter()
        .filter(|w| !statuses.iter().any(|s| s == w))
        .collect();
    assert!(
        unknown.is_empty(),
        "the header names statuses that gc_status lacks: {unknown:?}"
    );
    for (path, text) in &headers[1..] {
        assert!(
            text.contains("\n * Common errors: "),
            "{path}'s banner states no `Common errors:` of its own"
        );
    }
    let functions = function_docs(&headers);
    let mut names: Vec<String> = functions.iter().map(|f| f.name.clone()).collect();
    names.sort();
    assert_eq!(
        names,
        crate::c_abi::header_functions(),
        "the doc parser must see every function the header declares"
    );
    assert!(
        functions.len() > 50,
        "parsed only {} functions",
        functions.len()
    );
    let mut missing = Vec::new();
    let mut clauses: HashMap<String, Vec<String>> = HashMap::new();
    for f in &functions {
        let name = &f.name;
        let Some(para) = paragraph(&f.lines, "Errors:") else {
            missing.push(format!("{name}: no line starting with `Errors:`"));
            continue;
        };
        let mut effective = error_words(&para).len();
        if para.starts_with("Errors: common") {
            match &f.common {
                Some(common) if !error_words(common).is_empty() => {
                    effective += error_words(common).len()
                }
                _ => missing.push(format!(
                    "{name}: `Errors: common` but no `Common errors:` paragraph naming \
                     statuses in its section's banner or the status section's"
                )),
            }
        }
        if para != "Errors: none." && effective == 0 {
            missing.push(format!("{name}: `{para}` names no status"));
        }
        for clause in status_clauses(&para) {
            if clause.len() >= 60 {
                clauses.entry(clause).or_default().push(name.clone());
            }
        }
    }
    assert!(
        missing.is_empty(),
        "exported functions without a valid errors list:\n{}",
        missing.join("\n")
    );
    let mut repeated: Vec<String> = clauses
        .into_iter()
        .filter(|(_, fns)| fns.len() > 3)
        .map(|(clause, fns)| format!("`{clause}` in {}", fns.join(", ")))
        .collect();
    repeated.sort();
    assert!(
        repeated.is_empty(),
        "errors written out in more than three functions: state them once, in the section's \
         `Common errors:` paragraph:\n{}",
        repeated.join("\n")
    );
}

/// The `GC_ERROR_X (reason)` clauses of an errors paragraph (a status and
/// the parenthesis after it, if any).
fn status_clauses(para: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = para;
    while let Some(i) = rest.find("GC_ERROR_") {
        let tail = &rest[i..];
        let word_end = tail
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(tail.len());
        let mut end = word_end;
        if tail[word_end..].starts_with(" (") {
            let mut depth = 0;
            for (j, c) in tail[word_end + 1..].char_indices() {
                match c {
                    '(' => depth += 1,
                    ')' => {
                        depth -= 1;
                        if depth == 0 {
                            end = word_end + 1 + j + 1;
                            break;
                        }
                    }
                    _ => {}
                }
            }
        }
        out.push(tail[..end].to_string());
        rest = &tail[word_end..];
    }
    out
}

/// The header is plain ASCII (no arrows, dashes or dots from doc comments).
#[test]
fn header_is_ascii() {
    let header = generate_all();
    let bad: Vec<String> = header
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.is_ascii())
        .map(|(i, l)| format!("line {}: {l}", i + 1))
        .collect();
    assert!(
        bad.is_empty(),
        "non-ASCII text in the header:\n{}",
        bad.join("\n")
    );
}

/// Each handle type's doc states who owns it and its thread safety.
#[test]
fn every_handle_type_states_ownership_and_thread_safety() {
    let header = generate_all();
    let mut missing = Vec::new();
    for chunk in header.split("\n\n") {
        let (doc, decl) = split_doc(chunk.trim_matches('\n'));
        let name = declared_name(decl.trim());
        if decl.trim() != format!("typedef struct {name} {name};") {
            continue;
        }
        for word in ["Ownership:", "Thread safety:"] {
            if !doc.contains(word) {
                missing.push(format!("{name} lacks `{word}`"));
            }
        }
    }
    assert!(missing.is_empty(), "{}", missing.join("\n"));
}
