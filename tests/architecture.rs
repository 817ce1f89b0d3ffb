//! Keeps core's module stack one-way: builds core/src's import graph (a
//! module per file; an edge for each `crate::` or `super::` path naming
//! another module, doc links included) and fails naming any cycle, and any
//! import that does not point down the stack declared in
//! docs/architecture.md. Also checks the lock policy: no
//! `.lock().unwrap()` in core/src (see core/src/lock.rs), and that core's
//! code names no C function or constant (the ffi boundary adds those).

use crate::support::repo;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Module path -> the modules it imports (other than itself, its ancestors
/// and its descendants).
type Imports = BTreeMap<String, BTreeSet<String>>;

/// The module a file under src/ is, `a::b` for a/b.rs and a/b/mod.rs ("" for
/// lib.rs).
fn module_of(rel: &Path) -> String {
    let mut parts: Vec<String> = rel
        .with_extension("")
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if matches!(parts.last().map(String::as_str), Some("mod" | "lib")) {
        parts.pop();
    }
    parts.join("::")
}

/// Every .rs file under `dir`, as (module, text).
fn sources(root: &Path, dir: &Path, out: &mut Vec<(String, String)>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            sources(root, &p, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            let text = std::fs::read_to_string(&p).unwrap();
            out.push((module_of(p.strip_prefix(root).unwrap()), text));
        }
    }
}

fn is_ident(c: char) -> bool {
    c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_'
}

/// The lowercase path (`a::b::c`) at the start of `s`.
fn leading_path(s: &str) -> String {
    let mut path = String::new();
    let mut rest = s;
    loop {
        let n = rest.find(|c: char| !is_ident(c)).unwrap_or(rest.len());
        if n == 0 || rest.starts_with(|c: char| c.is_ascii_digit()) {
            break;
        }
        if !path.is_empty() {
            path.push_str("::");
        }
        path.push_str(&rest[..n]);
        rest = &rest[n..];
        match rest.strip_prefix("::") {
            Some(r) if r.starts_with(|c: char| is_ident(c)) => rest = r,
            _ => break,
        }
    }
    path
}

/// The paths `text` names after `prefix` (`crate::` or `super::`), each
/// item of a `prefix{a, b::c}` group separately.
fn paths_after(text: &str, prefix: &str) -> Vec<String> {
    let mut out = Vec::new();
    for (at, _) in text.match_indices(prefix) {
        let before = text[..at].chars().next_back();
        if before.is_some_and(|c| is_ident(c) || c == ':') {
            continue; // part of a longer path, e.g. `super::super::` or `a_crate::`
        }
        let rest = &text[at + prefix.len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let end = group.find('}').unwrap_or(group.len());
            for item in group[..end].split(',') {
                let p = leading_path(item.trim());
                if !p.is_empty() {
                    out.push(p);
                }
            }
        } else {
            let p = leading_path(rest);
            if !p.is_empty() {
                out.push(p);
            }
        }
    }
    out
}

/// What lib.rs re-exports: each name at the crate root (`X` of `pub use
/// a::b::X;`, `Z` of `pub use a::{Y as Z};`) with the path it names
/// (`a::b::X`, `a::Y`).
fn root_exports(lib: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for stmt in lib.split(';') {
        let Some(at) = stmt.find("pub use ") else {
            continue;
        };
        let stmt = stmt[at + "pub use ".len()..].trim();
        let (base, items): (&str, Vec<&str>) = match stmt.split_once('{') {
            Some((base, group)) => (base, group.trim_end_matches('}').split(',').collect()),
            None => ("", vec![stmt]),
        };
        for item in items.iter().map(|i| i.trim()).filter(|i| !i.is_empty()) {
            let (path, name) = match item.split_once(" as ") {
                Some((p, n)) => (p.trim(), n.trim()),
                None => (item, item.rsplit("::").next().unwrap()),
            };
            out.insert(name.to_string(), format!("{base}{path}"));
        }
    }
    out
}

/// The items lib.rs defines itself (`pub type X`, `pub fn f`, ...): lib.rs
/// declares modules and re-exports, so a module naming one of these would
/// import the crate root, above every module.
fn root_items(lib: &str) -> Vec<String> {
    let kinds = [
        "type", "struct", "enum", "fn", "const", "static", "trait", "union",
    ];
    lib.lines()
        .map(str::trim_start)
        .filter_map(|l| {
            let l = l
                .strip_prefix("pub(crate) ")
                .or(l.strip_prefix("pub "))
                .unwrap_or(l);
            let (kind, rest) = l.split_once(' ')?;
            kinds.contains(&kind).then(|| {
                rest.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                    .next()
                    .unwrap_or("")
                    .to_string()
            })
        })
        .filter(|n| !n.is_empty())
        .collect()
}

/// The first name after each `crate::` in `text`'s code (comment lines
/// left out), each item of a `crate::{A, b::C}` group separately, whatever
/// its case: `HostFn` of `use crate::HostFn;`.
fn crate_root_names(text: &str) -> Vec<String> {
    let code: String = text
        .lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n");
    let word = |s: &str| {
        let s = s.trim_start();
        let n = s
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(s.len());
        s[..n].to_string()
    };
    let mut out = Vec::new();
    for (at, _) in code.match_indices("crate::") {
        let before = code[..at].chars().next_back();
        if before.is_some_and(|c| is_ident(c) || c.is_ascii_uppercase() || c == ':') {
            continue;
        }
        let rest = &code[at + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let end = group.find('}').unwrap_or(group.len());
            out.extend(group[..end].split(',').map(word));
        } else {
            out.push(word(rest));
        }
    }
    out.retain(|w| !w.is_empty());
    out
}

/// The module paths that module `m`'s `text` names, from the crate root:
/// each `crate::a::b` as `a::b`, each `super::x` (in module `p::m`) as
/// `p::x`.
fn module_paths(m: &str, text: &str) -> Vec<String> {
    let parent = m.rsplit_once("::").map_or("", |(p, _)| p);
    let mut refs = paths_after(text, "crate::");
    refs.extend(paths_after(text, "super::").into_iter().map(|p| {
        // `super::super::x` climbs one more level per `super`.
        let (mut base, mut p) = (parent, p.as_str());
        while let Some(rest) = p.strip_prefix("super::") {
            base = base.rsplit_once("::").map_or("", |(b, _)| b);
            p = rest;
        }
        if base.is_empty() {
            p.to_string()
        } else {
            format!("{base}::{p}")
        }
    }));
    refs
}

/// The import graph of a crate's sources, given as (module, text). A name
/// the crate root re-exports (`crate::HostFn` for lib.rs's `pub use
/// driver::HostFn;`) counts as an import of the module it comes from; one
/// the root defines itself counts as an import of `crate` (no module: the
/// stack check then names it).
fn imports(files: &[(String, String)]) -> Imports {
    let names: BTreeSet<&str> = files.iter().map(|(m, _)| m.as_str()).collect();
    let lib = files
        .iter()
        .find(|(m, _)| m.is_empty())
        .map_or("", |(_, t)| t.as_str());
    let exports = root_exports(lib);
    let defined = root_items(lib);
    let mut graph = Imports::new();
    for (m, text) in files {
        if m.is_empty() {
            continue; // lib.rs declares and re-exports; it imports nothing
        }
        // A trailing test module may use anything.
        let text = text
            .find("#[cfg(test)]\nmod tests")
            .map_or(&text[..], |i| &text[..i]);
        let mut refs = module_paths(m, text);
        for name in crate_root_names(text) {
            if names.contains(name.as_str()) {
                continue; // a module path: `paths_after` has it
            }
            if let Some(path) = exports.get(&name) {
                refs.push(path.clone());
            } else if defined.contains(&name) {
                graph
                    .entry(m.clone())
                    .or_default()
                    .insert("crate".to_string());
            }
        }
        let edges = graph.entry(m.clone()).or_default();
        for r in refs {
            let segs: Vec<&str> = r.split("::").collect();
            let Some(target) = (1..=segs.len())
                .rev()
                .map(|k| segs[..k].join("::"))
                .find(|c| names.contains(c.as_str()))
            else {
                continue;
            };
            let related = target == *m
                || m.starts_with(&format!("{target}::"))
                || target.starts_with(&format!("{m}::"));
            if !related {
                edges.insert(target);
            }
        }
    }
    graph
}

/// A cycle of the graph, as the modules along it (first repeated last), if
/// there is one.
fn find_cycle(graph: &Imports) -> Option<Vec<String>> {
    #[derive(Clone, Copy, PartialEq)]
    enum Mark {
        New,
        Open,
        Done,
    }
    fn visit(
        v: &str,
        graph: &Imports,
        mark: &mut BTreeMap<String, Mark>,
        path: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        mark.insert(v.to_string(), Mark::Open);
        path.push(v.to_string());
        for w in graph.get(v).into_iter().flatten() {
            match mark.get(w).copied().unwrap_or(Mark::New) {
                Mark::Open => {
                    let start = path.iter().position(|p| p == w).unwrap();
                    let mut cycle = path[start..].to_vec();
                    cycle.push(w.clone());
                    return Some(cycle);
                }
                Mark::New => {
                    if let Some(c) = visit(w, graph, mark, path) {
                        return Some(c);
                    }
                }
                Mark::Done => {}
            }
        }
        path.pop();
        mark.insert(v.to_string(), Mark::Done);
        None
    }
    let mut mark = BTreeMap::new();
    for v in graph.keys() {
        if mark.get(v).copied().unwrap_or(Mark::New) == Mark::New {
            if let Some(c) = visit(v, graph, &mut mark, &mut Vec::new()) {
                return Some(c);
            }
        }
    }
    None
}

/// The stack docs/architecture.md declares: each top-level module of core
/// with the modules it may import, top first. Read from the lines between
/// `<!-- stack -->` and `<!-- /stack -->`: `module  what it owns  -> a b c`
/// (indented lines continue the description).
fn declared_stack(doc: &str) -> Vec<(String, BTreeSet<String>)> {
    let start = doc
        .find("<!-- stack -->")
        .expect("docs/architecture.md has no <!-- stack -->");
    let end = doc
        .find("<!-- /stack -->")
        .expect("docs/architecture.md has no <!-- /stack -->");
    doc[start..end]
        .lines()
        .skip(1)
        .filter(|l| !l.trim().is_empty() && !l.starts_with("```"))
        .filter(|l| !l.starts_with(char::is_whitespace))
        .map(|l| {
            let name = l.split_whitespace().next().unwrap().to_string();
            let allowed = l
                .split_once("->")
                .map_or("", |(_, a)| a)
                .split_whitespace()
                .map(str::to_string)
                .collect();
            (name, allowed)
        })
        .collect()
}

/// The top-level module of a module path (`graph` for `graph::fuse::jit`).
fn top(m: &str) -> &str {
    m.split("::").next().unwrap()
}

/// Problems with `graph` against the declared `stack`: imports between
/// top-level modules the stack does not allow, allowances pointing up, and
/// modules missing from the stack.
fn stack_violations(graph: &Imports, stack: &[(String, BTreeSet<String>)]) -> Vec<String> {
    let level = |m: &str| stack.iter().position(|(n, _)| n == m);
    let mut out = Vec::new();
    for (i, (m, allowed)) in stack.iter().enumerate() {
        for a in allowed {
            match level(a) {
                Some(j) if j > i => {}
                Some(_) => out.push(format!(
                    "the stack lets `{m}` import `{a}`, which is not below it"
                )),
                None => out.push(format!(
                    "the stack lets `{m}` import `{a}`, which is not in it"
                )),
            }
        }
    }
    for (m, edges) in graph {
        let Some(i) = level(top(m)) else {
            out.push(format!(
                "module `{m}` is not in the stack of docs/architecture.md"
            ));
            continue;
        };
        for t in edges {
            let t = top(t);
            if t != top(m) && !stack[i].1.contains(t) {
                out.push(format!(
                    "`{m}` imports `{t}`, which the stack does not let `{}` import",
                    top(m)
                ));
            }
        }
    }
    out
}

fn core_imports() -> Imports {
    let src = repo().join("core/src");
    let mut files = Vec::new();
    sources(&src, &src, &mut files);
    imports(&files)
}

/// The graph between top-level modules (`pool::device -> context` counts as
/// `pool -> context`), so a submodule importing its parent's user is a cycle.
fn top_level(graph: &Imports) -> Imports {
    let mut out = Imports::new();
    for (m, edges) in graph {
        let e = out.entry(top(m).to_string()).or_default();
        e.extend(
            edges
                .iter()
                .map(|t| top(t).to_string())
                .filter(|t| t != top(m)),
        );
    }
    out
}

#[test]
fn core_imports_have_no_cycle() {
    let graph = core_imports();
    assert!(graph.len() > 20, "core/src was not read: {graph:?}");
    for g in [&graph, &top_level(&graph)] {
        if let Some(c) = find_cycle(g) {
            panic!("core/src has an import cycle: {}", c.join(" -> "));
        }
    }
}

#[test]
fn core_imports_point_down_the_declared_stack() {
    let doc = std::fs::read_to_string(repo().join("docs/architecture.md")).unwrap();
    let stack = declared_stack(&doc);
    let problems = stack_violations(&core_imports(), &stack);
    assert!(
        problems.is_empty(),
        "docs/architecture.md:\n{}",
        problems.join("\n")
    );
}

#[test]
fn the_check_finds_a_cycle_and_an_upward_import() {
    let files = |extra: &str| {
        vec![
            (String::new(), "mod a; mod b; mod c;".to_string()),
            ("a".to_string(), "use crate::b::Thing;".to_string()),
            (
                "b".to_string(),
                format!("use crate::{{c, error}};\n{extra}"),
            ),
            (
                "c".to_string(),
                "//! Below all.\n#[cfg(test)]\nmod tests { use crate::a; }".to_string(),
            ),
            (
                "b::inner".to_string(),
                "use super::super::c; use super::X;".to_string(),
            ),
        ]
    };
    let clean = imports(&files(""));
    assert_eq!(find_cycle(&clean), None, "{clean:?}");
    assert_eq!(clean["b::inner"], BTreeSet::from(["c".to_string()]));
    let stack = declared_stack(
        "<!-- stack -->\n```\na  top  -> b c\nb  mid  -> c\nc  bottom\n```\n<!-- /stack -->",
    );
    assert_eq!(stack_violations(&clean, &stack), Vec::<String>::new());
    let cyclic = imports(&files("fn f() { crate::a::g() }"));
    assert_eq!(
        find_cycle(&cyclic).map(|c| c.join(" -> ")).as_deref(),
        Some("a -> b -> a")
    );
    let nested = imports(
        &files("")
            .into_iter()
            .chain([("c::deep".to_string(), "use crate::a;".to_string())])
            .collect::<Vec<_>>(),
    );
    assert_eq!(
        find_cycle(&nested),
        None,
        "file by file, c::deep -> a -> b -> c is no cycle"
    );
    assert!(
        find_cycle(&top_level(&nested)).is_some(),
        "but c -> a -> b -> c is"
    );
    let up = stack_violations(&cyclic, &stack);
    assert!(up.iter().any(|p| p.contains("`b` imports `a`")), "{up:?}");
}

#[test]
fn names_from_the_crate_root_count_as_imports_of_their_modules() {
    let files = vec![
        (
            String::new(),
            "//! Root.\nmod a;\nmod b;\npub use a::Top;\npub use b::inner::{Item, Thing as Other};\n\
             /// Defined here.\npub type Root = u8;"
                .to_string(),
        ),
        ("a".to_string(), "pub struct Top;".to_string()),
        (
            "b".to_string(),
            "use crate::Top;\n/// [`Root`](crate::Root): a doc link, not code.\nfn f() {}".to_string(),
        ),
        (
            "b::inner".to_string(),
            "fn f(_: crate::Root) {}\nuse crate::{Item, Other};".to_string(),
        ),
    ];
    assert_eq!(root_items(&files[0].1), vec!["Root".to_string()]);
    let graph = imports(&files);
    assert_eq!(graph["b"], BTreeSet::from(["a".to_string()]));
    assert_eq!(graph["b::inner"], BTreeSet::from(["crate".to_string()]));
    let stack =
        declared_stack("<!-- stack -->\n```\na  top  -> b\nb  bottom\n```\n<!-- /stack -->");
    let problems = stack_violations(&graph, &stack);
    assert!(
        problems.iter().any(|p| p.contains("`b` imports `a`")),
        "{problems:?}"
    );
    assert!(
        problems
            .iter()
            .any(|p| p.contains("`b::inner` imports `crate`")),
        "{problems:?}"
    );
}

/// lib.rs declares modules and re-exports; every item lives in a module of
/// the stack, so no module imports the crate root (as `driver` once did for
/// `HostFn`, which lib.rs defined), and `driver` imports only what is below
/// it.
#[test]
fn core_root_defines_nothing_and_driver_imports_only_below_it() {
    let lib = std::fs::read_to_string(repo().join("core/src/lib.rs")).unwrap();
    assert_eq!(
        root_items(&lib),
        Vec::<String>::new(),
        "core/src/lib.rs defines items: move them into the module of the stack they belong to"
    );
    let graph = core_imports();
    let below = ["lock", "timing", "error"];
    let up: Vec<String> = graph
        .iter()
        .filter(|(m, _)| top(m) == "driver")
        .flat_map(|(m, edges)| {
            edges
                .iter()
                .filter(|t| top(t) != "driver" && !below.contains(&top(t)))
                .map(move |t| format!("{m} -> {t}"))
        })
        .collect();
    assert!(up.is_empty(), "driver/ imports modules above it: {up:?}");
}

/// What the files of `module` (a folder of core/src) name outside it, or
/// of CUDA: `crate::` and `super::` paths that leave the folder (its tests
/// included), names from the crate root, and the words `driver` and
/// `cudarc` in code (comments may speak of the driver).
fn names_outside(files: &[(String, String)], module: &str) -> Vec<String> {
    let inside = |p: &str| p == module || p.starts_with(&format!("{module}::"));
    let mut found = Vec::new();
    for (m, text) in files {
        for p in module_paths(m, text) {
            if !inside(&p) {
                found.push(format!("{m}: {p}"));
            }
        }
        let first = module.split("::").next().unwrap();
        for name in crate_root_names(text) {
            if name != first {
                found.push(format!("{m}: crate::{name}"));
            }
        }
        for line in text.lines().filter(|l| !l.trim_start().starts_with("//")) {
            let words = line.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'));
            found.extend(
                words
                    .filter(|w| matches!(*w, "driver" | "cudarc"))
                    .map(|w| format!("{m}: {w}")),
            );
        }
    }
    found
}

/// The pool's allocator logic (core/src/pool/logic/) is pure: it calls no
/// driver and names nothing outside its folder, so its tests (unit,
/// property, trace) need no GPU and run under Miri. The device side is
/// beside it (pool/device.rs, pool/range.rs).
#[test]
fn pool_logic_names_nothing_outside_its_folder() {
    let src = repo().join("core/src");
    let mut files = Vec::new();
    sources(&src, &src.join("pool/logic"), &mut files);
    assert!(
        files.iter().any(|(m, _)| m == "pool::logic::allocator"),
        "core/src/pool/logic was not read: {:?}",
        files.iter().map(|(m, _)| m).collect::<Vec<_>>()
    );
    let found = names_outside(&files, "pool::logic");
    assert!(
        found.is_empty(),
        "the pool's logic is pure (no driver, nothing outside pool/logic/): {found:?}"
    );
    // The check sees what it must.
    let bad = [
        ("pool::logic::a".to_string(), "use crate::driver::memory;\nuse super::super::device::Pool;\nfn f(_: crate::Error) {}\nuse crate::pool::logic::b::X;".to_string()),
    ];
    let found = names_outside(&bad, "pool::logic");
    for want in ["driver::memory", "pool::device", "crate::Error", ": driver"] {
        assert!(found.iter().any(|f| f.contains(want)), "{want}: {found:?}");
    }
    assert!(!found.iter().any(|f| f.contains("logic::b")), "{found:?}");
}

#[test]
fn core_locks_only_through_the_lock_policy() {
    let src = repo().join("core/src");
    let mut files = Vec::new();
    sources(&src, &src, &mut files);
    let offenders: Vec<&str> = files
        .iter()
        .filter(|(_, text)| text.contains(".lock().unwrap()") || text.contains(".lock()\n"))
        .map(|(m, _)| m.as_str())
        .filter(|m| *m != "lock")
        .collect();
    assert!(
        offenders.is_empty(),
        "lock through crate::lock::lock (poisoned guards are recovered), not .lock(): {offenders:?}"
    );
}

/// Names of `ffi/src`'s exports (`pub extern "C" fn NAME`) and public
/// constants (`pub const NAME`).
fn c_names() -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    for e in std::fs::read_dir(repo().join("ffi/src")).unwrap() {
        let path = e.unwrap().path();
        if path.extension().is_none_or(|x| x != "rs") {
            continue; // a module's folder holds its tests, no exports
        }
        let text = std::fs::read_to_string(path).unwrap();
        for marker in ["extern \"C\" fn ", "pub const "] {
            for (at, _) in text.match_indices(marker) {
                let rest = &text[at + marker.len()..];
                let end = rest
                    .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                    .unwrap_or(rest.len());
                names.insert(rest[..end].to_string());
            }
        }
    }
    names
}

#[test]
fn core_code_does_not_name_c_functions_or_constants() {
    let names = c_names();
    assert!(names.contains("gc_capture_begin"), "{names:?}");
    let src = repo().join("core/src");
    let mut files = Vec::new();
    sources(&src, &src, &mut files);
    let mut found = Vec::new();
    for (m, text) in &files {
        let text = text
            .find("#[cfg(test)]\nmod tests")
            .map_or(&text[..], |i| &text[..i]);
        for line in text.lines().filter(|l| !l.trim_start().starts_with("//")) {
            let words = line.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'));
            found.extend(
                words
                    .filter(|w| names.contains(*w))
                    .map(|w| format!("{m}: {w}")),
            );
        }
    }
    assert!(
        found.is_empty(),
        "core speaks of core concepts; the ffi boundary adds the C function's name: {found:?}"
    );
}
