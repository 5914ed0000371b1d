//! Build tools and package managers: cargo, npm, pip, go and the compilers and test runners.
//! Building and testing runs code from the workspace (medium, contained by the sandbox);
//! registries are the network; installing and publishing reach outside the workspace.

use tool_core::Risk;

use super::super::Reach;
use super::super::words::Word;
use super::{Class, contained, dynamic_flag, low};

/// Programs that build, test or run code from the workspace: medium.
const BUILDERS: &[&str] = &[
    "make",
    "gmake",
    "cmake",
    "ninja",
    "meson",
    "gcc",
    "g++",
    "cc",
    "c++",
    "clang",
    "clang++",
    "rustc",
    "rustfmt",
    "javac",
    "java",
    "mvn",
    "gradle",
    "dotnet",
    "swift",
    "swiftc",
    "zig",
    "pytest",
    "tox",
    "nox",
    "jest",
    "vitest",
    "mocha",
    "tsc",
    "eslint",
    "prettier",
    "black",
    "ruff",
    "mypy",
    "cargo-fmt",
    "ctest",
    "just",
    "bazel",
];

/// Build tools and package managers; `None` when `key` is neither.
pub(crate) fn builder(key: &str, args: &[Word]) -> Option<Class> {
    Some(match key {
        "cargo" => cargo(args),
        "npm" | "pnpm" | "yarn" => npm(key, args),
        "pip" | "pip3" | "uv" | "pipx" | "poetry" | "conda" => pip(key, args),
        "go" => go(args),
        _ if BUILDERS.contains(&key) => {
            contained("builds, tests or formats code, which runs code from the workspace")
        }
        _ => return None,
    })
}

fn first_operand(args: &[Word]) -> Option<&str> {
    args.iter()
        .map(|a| a.display())
        .find(|t| !t.starts_with('-') && !t.starts_with('+'))
}

/// The class of an `--editor PROGRAM` option: it runs that program.
fn editor_option(tool: &str, args: &[Word]) -> Option<Class> {
    let i = args
        .iter()
        .position(|a| a.display().starts_with("--editor") || a.display().starts_with("--edit"))?;
    let t = args[i].display();
    let program = match t.split_once('=') {
        Some((_, v)) => Some(v.to_string()),
        None => args
            .get(i + 1)
            .and_then(|w| w.literal())
            .map(str::to_string),
    };
    Some(Class::new(
        Risk::High,
        Reach::Unknown,
        match program {
            Some(p) => format!("`{tool} --editor {p}` runs {p} as the editor"),
            None => format!("`{tool} --editor` runs a program computed at run time"),
        },
    ))
}

fn cargo(args: &[Word]) -> Class {
    if args.iter().any(|a| a.display().starts_with("--config")) {
        return Class::new(
            Risk::High,
            Reach::Unknown,
            "`cargo --config` can name programs to run",
        );
    }
    if let Some(d) = dynamic_flag(args) {
        return Class::new(
            Risk::High,
            Reach::Unknown,
            format!(
                "`{}` is computed at run time and could be a cargo option such as --config",
                d.raw
            ),
        );
    }
    if args
        .iter()
        .any(|a| a.is("--version") || a.is("-V") || a.is("--list"))
        && first_operand(args).is_none()
    {
        return low();
    }
    match first_operand(args) {
        None => low(),
        Some(
            "metadata" | "tree" | "version" | "locate-project" | "pkgid" | "read-manifest"
            | "verify-project" | "help",
        ) => low(),
        Some(
            "build" | "b" | "check" | "c" | "test" | "t" | "run" | "r" | "clippy" | "fmt" | "doc"
            | "d" | "bench" | "clean" | "fix" | "package" | "vendor" | "generate-lockfile"
            | "rustc" | "rustdoc" | "nextest" | "llvm-cov" | "miri" | "xtask" | "expand",
        ) => contained("builds or runs code from the workspace"),
        Some("update" | "fetch" | "add" | "remove" | "search" | "info") => Class::new(
            Risk::Medium,
            Reach::Network,
            "downloads from the package registry",
        )
        .net(),
        Some(
            "install" | "uninstall" | "publish" | "login" | "logout" | "owner" | "yank" | "new"
            | "init",
        ) => Class::new(
            Risk::High,
            Reach::OutsideWrites,
            "installs, publishes or changes things outside the workspace",
        )
        .net(),
        Some(other) => Class::new(
            Risk::Medium,
            Reach::Unknown,
            format!(
                "`cargo {other}` is not a subcommand Toolshed knows (it may be a cargo-{other} program)"
            ),
        ),
    }
}

fn npm(key: &str, args: &[Word]) -> Class {
    if let Some(c) = editor_option(key, args) {
        return c;
    }
    let sub = first_operand(args);
    let second = args
        .iter()
        .map(|a| a.display())
        .filter(|t| !t.starts_with('-'))
        .nth(1);
    match sub {
        None if key == "yarn" => Class::new(
            Risk::High,
            Reach::Network,
            "installs packages from the network",
        )
        .net(),
        None => low(),
        Some("edit") => Class::new(Risk::Medium, Reach::Unknown, "`npm edit` opens an editor"),
        Some("config" | "c") => match second {
            None | Some("get" | "list" | "ls") => low(),
            Some("edit") => Class::new(
                Risk::Medium,
                Reach::Unknown,
                "`npm config edit` opens the configuration in an editor",
            ),
            Some(_) => Class::new(
                Risk::Medium,
                Reach::OutsideWrites,
                "`npm config set` changes the user's npm configuration",
            ),
        },
        Some("ls" | "list" | "help" | "root" | "prefix" | "bin" | "why" | "explain") => low(),
        Some("view" | "info" | "show" | "outdated" | "search") => {
            Class::new(Risk::Medium, Reach::Network, "queries the package registry").net()
        }
        Some(
            "test" | "t" | "run" | "run-script" | "start" | "build" | "stop" | "restart" | "lint"
            | "exec-local",
        ) => contained("runs a package script from the workspace"),
        Some(_) => Class::new(
            Risk::High,
            Reach::Network,
            "installs, publishes or runs packages from the network",
        )
        .net(),
    }
}

fn pip(key: &str, args: &[Word]) -> Class {
    if let Some(c) = editor_option(key, args) {
        return c;
    }
    let second = args
        .iter()
        .map(|a| a.display())
        .filter(|t| !t.starts_with('-'))
        .nth(1);
    match first_operand(args) {
        None => low(),
        Some("config") => match second {
            None | Some("list" | "get" | "debug") => low(),
            Some("edit") => Class::new(
                Risk::Medium,
                Reach::Unknown,
                "`pip config edit` opens the configuration in an editor",
            ),
            Some(_) => Class::new(
                Risk::Medium,
                Reach::OutsideWrites,
                "`pip config set` changes the user's pip configuration",
            ),
        },
        Some(
            "list" | "show" | "freeze" | "check" | "help" | "debug" | "inspect" | "env" | "version",
        ) => low(),
        Some("run") if key == "uv" || key == "poetry" => contained("runs code from the workspace"),
        Some(_) => Class::new(
            Risk::High,
            Reach::Network,
            "installs or removes packages, from the network",
        )
        .net(),
    }
}

fn go(args: &[Word]) -> Class {
    match first_operand(args) {
        Some("version" | "env" | "list" | "doc" | "vet" | "help") => low(),
        Some("get" | "install" | "mod") => {
            Class::new(Risk::High, Reach::Network, "downloads and installs modules").net()
        }
        _ => contained("builds or runs code from the workspace"),
    }
}
