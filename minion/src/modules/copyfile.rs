//! `copyfile`: Func's file transfer (`open` + `append` chunks, or one-shot
//! `copyfile` with a backup of the old file) and `checksum`.
//!
//! Paths are absolute paths on the managed host, placed below the minion's
//! `--root`. Writes are refused outside the `copyfile_dirs` of minion.conf
//! (default: all of the root), for `..` components, and through any symlink
//! on the way (so a link planted inside an allowed directory cannot redirect a
//! write elsewhere). `copyfile` replaces the file atomically.

use std::fs::{self, OpenOptions};
use std::io::{Read, Write};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use common::xmlrpc::args::Args;
use common::Value;

use super::test::unreachable_method;
use super::{ArgInfo, Context, MethodError, MethodInfo, MethodResult, Module};

pub struct CopyFile;

const PATH_ARG: ArgInfo = ArgInfo {
    name: "filepath",
    kind: "string",
    optional: false,
    description: "absolute destination path",
};
const BUF_ARG: ArgInfo = ArgInfo {
    name: "filebuf",
    kind: "base64",
    optional: false,
    description: "file content",
};

const METHODS: &[MethodInfo] = &[
    MethodInfo {
        name: "checksum",
        description: "SHA-1 hex of a file, or of the string itself if no such file.",
        args: &[ArgInfo {
            name: "thing",
            kind: "string",
            optional: false,
            description: "path or string",
        }],
    },
    MethodInfo {
        name: "open",
        description: "Creates or truncates a file (and its directories); returns the path.",
        args: &[
            PATH_ARG,
            ArgInfo {
                name: "mode",
                kind: "int",
                optional: true,
                description: "permission bits",
            },
            ArgInfo {
                name: "uid",
                kind: "int",
                optional: true,
                description: "owner (-1 keeps)",
            },
            ArgInfo {
                name: "gid",
                kind: "int",
                optional: true,
                description: "group (-1 keeps)",
            },
        ],
    },
    MethodInfo {
        name: "append",
        description: "Appends a chunk to a file; returns 1.",
        args: &[PATH_ARG, BUF_ARG],
    },
    MethodInfo {
        name: "copyfile",
        description: "Writes a whole file atomically, backing up a different old one; 1 copied, 0 unchanged.",
        args: &[
            PATH_ARG,
            BUF_ARG,
            ArgInfo {
                name: "mode",
                kind: "int",
                optional: true,
                description: "permission bits (default 0644)",
            },
            ArgInfo {
                name: "uid",
                kind: "int",
                optional: true,
                description: "owner (default 0)",
            },
            ArgInfo {
                name: "gid",
                kind: "int",
                optional: true,
                description: "group (default 0)",
            },
            ArgInfo {
                name: "force",
                kind: "boolean",
                optional: true,
                description: "write even if unchanged",
            },
        ],
    },
];

impl Module for CopyFile {
    fn name(&self) -> &'static str {
        "copyfile"
    }
    fn description(&self) -> &'static str {
        "Allows for smart copying of a file."
    }
    fn methods(&self) -> &'static [MethodInfo] {
        METHODS
    }
    fn call(&self, ctx: &Context<'_>, method: &str, args: Args<'_>) -> MethodResult {
        match method {
            "checksum" => {
                args.arity(1, 1)?;
                let thing = args.string(0, "thing")?;
                match readable(ctx, &thing) {
                    Some(path) => sha1_file(&path).map(Value::String),
                    None => Ok(Value::String(sha1_hex(thing.as_bytes()))),
                }
            }
            "open" => {
                args.arity(1, 4)?;
                let requested = args.string(0, "filepath")?;
                let path = writable(ctx, &requested)?;
                create_parents(&path)?;
                let file = OpenOptions::new()
                    .write(true)
                    .create(true)
                    .truncate(true)
                    .custom_flags(libc::O_NOFOLLOW)
                    .open(&path)
                    .map_err(|e| io_error("opening", &requested, e))?;
                if let Some(mode) = mode_arg(&args, 1)? {
                    file.set_permissions(fs::Permissions::from_mode(mode))
                        .map_err(|e| io_error("setting the mode of", &requested, e))?;
                }
                chown(
                    &path,
                    args.opt_i64(2, "uid")?.unwrap_or(-1),
                    args.opt_i64(3, "gid")?.unwrap_or(-1),
                )?;
                Ok(Value::String(requested))
            }
            "append" => {
                args.arity(2, 2)?;
                let requested = args.string(0, "filepath")?;
                let data = args.bytes(1, "filebuf")?;
                let path = writable(ctx, &requested)?;
                let mut file = OpenOptions::new()
                    .append(true)
                    .custom_flags(libc::O_NOFOLLOW)
                    .open(&path)
                    .map_err(|e| io_error("appending to", &requested, e))?;
                file.write_all(&data)
                    .map_err(|e| io_error("appending to", &requested, e))?;
                Ok(Value::Integer(1))
            }
            "copyfile" => {
                args.arity(2, 6)?;
                let requested = args.string(0, "filepath")?;
                let data = args.bytes(1, "filebuf")?;
                let mode = mode_arg(&args, 2)?.unwrap_or(0o644);
                let (uid, gid) = (
                    args.opt_i64(3, "uid")?.unwrap_or(0),
                    args.opt_i64(4, "gid")?.unwrap_or(0),
                );
                let force = args.opt_bool(5, "force")?.unwrap_or(false);
                let path = writable(ctx, &requested)?;
                copy(&path, &requested, &data, mode, uid, gid, force)
            }
            _ => unreachable_method(method),
        }
    }
}

fn copy(
    path: &Path,
    requested: &str,
    data: &[u8],
    mode: u32,
    uid: i64,
    gid: i64,
    force: bool,
) -> MethodResult {
    let exists = path.exists();
    if exists && !force && sha1_file(path)? == sha1_hex(data) {
        return Ok(Value::Integer(0));
    }
    create_parents(path)?;
    if exists {
        let backup = backup_name(path);
        fs::copy(path, &backup).map_err(|e| io_error("backing up", requested, e))?;
    }
    let dir = path
        .parent()
        .ok_or_else(|| MethodError::value("destination has no parent directory"))?;
    let tmp = dir.join(format!(
        ".{}.funcd-{}",
        path.file_name().map(|n| n.to_string_lossy()).unwrap_or_default(),
        std::process::id()
    ));
    let written = (|| {
        let mut f = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(mode)
            .open(&tmp)?;
        f.write_all(data)?;
        f.set_permissions(fs::Permissions::from_mode(mode))?;
        f.sync_all()?;
        fs::rename(&tmp, path)?;
        fs::File::open(dir)?.sync_all()
    })();
    if let Err(e) = written {
        let _ = fs::remove_file(&tmp);
        return Err(io_error("writing", requested, e));
    }
    chown(path, uid, gid)?;
    Ok(Value::Integer(1))
}

/// `<file>.YYYY-MM-DD@HH:MM~` (UTC), as Func names backups; a second backup
/// in the same minute gets a counter instead of replacing the first.
fn backup_name(path: &Path) -> PathBuf {
    let now = time::OffsetDateTime::now_utc();
    let stamp = format!(
        "{:04}-{:02}-{:02}@{:02}:{:02}",
        now.year(),
        u8::from(now.month()),
        now.day(),
        now.hour(),
        now.minute()
    );
    let base = format!("{}.{stamp}", path.display());
    let mut candidate = PathBuf::from(format!("{base}~"));
    let mut n = 1;
    while candidate.exists() {
        candidate = PathBuf::from(format!("{base}.{n}~"));
        n += 1;
    }
    candidate
}

/// The place below the root where `requested` may be written.
fn writable(ctx: &Context<'_>, requested: &str) -> Result<PathBuf, MethodError> {
    let path = ctx
        .root
        .confine(requested)
        .map_err(|e| MethodError::value(e.to_string()))?;
    let allowed = ctx
        .copyfile_dirs
        .iter()
        .filter_map(|d| ctx.root.confine(d).ok())
        .any(|dir| path.starts_with(&dir));
    if !allowed {
        return Err(MethodError::value(format!(
            "{} is outside the directories copyfile may write ({})",
            common::paths::shorten(requested),
            ctx.copyfile_dirs.join(", ")
        )));
    }
    // No symlink anywhere between the root and the file itself.
    let mut walk = ctx.root.dir().to_path_buf();
    for part in path.strip_prefix(ctx.root.dir()).unwrap_or(&path).components() {
        walk.push(part);
        match fs::symlink_metadata(&walk) {
            Ok(meta) if meta.file_type().is_symlink() => {
                return Err(MethodError::value(format!(
                    "{} goes through a symbolic link; refused",
                    common::paths::shorten(requested)
                )));
            }
            Ok(_) => {}
            Err(_) => break,
        }
    }
    Ok(path)
}

/// The file `requested` names, if it exists below the root without escaping it.
fn readable(ctx: &Context<'_>, requested: &str) -> Option<PathBuf> {
    let path = ctx.root.confine(requested).ok()?;
    let real = fs::canonicalize(&path).ok()?;
    let root = fs::canonicalize(ctx.root.dir()).ok()?;
    (real.starts_with(root) && real.is_file()).then_some(real)
}

fn create_parents(path: &Path) -> Result<(), MethodError> {
    match path.parent() {
        Some(dir) => fs::create_dir_all(dir)
            .map_err(|e| MethodError::os(format!("cannot create {}: {e}", dir.display()))),
        None => Ok(()),
    }
}

fn mode_arg(args: &Args<'_>, idx: usize) -> Result<Option<u32>, MethodError> {
    let Some(v) = args.opt(idx) else {
        return Ok(None);
    };
    let mode = match v {
        Value::String(s) => u32::from_str_radix(s.trim().trim_start_matches("0o"), 8).map_err(|_| {
            MethodError::value(format!(
                "mode {:?} is not an octal number",
                common::paths::shorten(s)
            ))
        })?,
        _ => u32::try_from(args.i64(idx, "mode")?)
            .map_err(|_| MethodError::value("mode must not be negative"))?,
    };
    if mode > 0o7777 {
        return Err(MethodError::value(format!("mode {mode:o} has bits beyond 07777")));
    }
    Ok(Some(mode))
}

/// Changes ownership when asked and possible: only root can give files away,
/// so an unprivileged minion keeps its own ownership (noted in the README).
fn chown(path: &Path, uid: i64, gid: i64) -> Result<(), MethodError> {
    if !nix::unistd::geteuid().is_root() || (uid < 0 && gid < 0) {
        return Ok(());
    }
    let to = |id: i64| u32::try_from(id).ok();
    nix::unistd::chown(
        path,
        to(uid).map(nix::unistd::Uid::from_raw),
        to(gid).map(nix::unistd::Gid::from_raw),
    )
    .map_err(|e| MethodError::os(format!("chown {}: {e}", path.display())))
}

fn io_error(action: &str, requested: &str, e: std::io::Error) -> MethodError {
    MethodError::os(format!("{action} {}: {e}", common::paths::shorten(requested)))
}

fn sha1_file(path: &Path) -> Result<String, MethodError> {
    let mut file =
        fs::File::open(path).map_err(|e| MethodError::os(format!("reading {}: {e}", path.display())))?;
    let mut ctx = ring::digest::Context::new(&ring::digest::SHA1_FOR_LEGACY_USE_ONLY);
    let mut buf = [0u8; 64 * 1024];
    loop {
        let n = file
            .read(&mut buf)
            .map_err(|e| MethodError::os(format!("reading {}: {e}", path.display())))?;
        if n == 0 {
            break;
        }
        ctx.update(&buf[..n]);
    }
    Ok(hex(ctx.finish().as_ref()))
}

fn sha1_hex(data: &[u8]) -> String {
    hex(ring::digest::digest(&ring::digest::SHA1_FOR_LEGACY_USE_ONLY, data).as_ref())
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::modules::Registry;
    use common::paths::Root;

    fn with_ctx<T>(dirs: &[&str], f: impl FnOnce(&Context<'_>, &Path) -> T) -> T {
        let dir = tempfile::tempdir().unwrap();
        let root = Root::new(dir.path());
        let dirs: Vec<String> = dirs.iter().map(|s| s.to_string()).collect();
        let registry = Registry::standard();
        let ctx = Context {
            root: &root,
            copyfile_dirs: &dirs,
            registry: &registry,
            jobs: None,
            caller: "test",
        };
        f(&ctx, dir.path())
    }

    fn call(ctx: &Context<'_>, method: &str, params: &[Value]) -> MethodResult {
        CopyFile.call(ctx, method, Args::new(method, params))
    }

    #[test]
    fn copyfile_checksum_matches_func() {
        with_ctx(&["/"], |ctx, dir| {
            let content = Value::Base64(b"this is a func test file".to_vec());
            let dest = Value::String("/tmp/func_test_file_dest".into());
            assert_eq!(
                call(ctx, "copyfile", &[dest.clone(), content.clone()]).unwrap(),
                Value::Integer(1)
            );
            assert_eq!(
                call(ctx, "copyfile", &[dest.clone(), content]).unwrap(),
                Value::Integer(0),
                "unchanged"
            );
            assert_eq!(
                call(ctx, "checksum", std::slice::from_ref(&dest)).unwrap(),
                Value::String("b36a8040e44c16605d7784cdf1b3d9ed04ea7f55".into())
            );
            assert_eq!(
                fs::read(dir.join("tmp/func_test_file_dest")).unwrap(),
                b"this is a func test file"
            );
            assert_eq!(
                call(ctx, "copyfile", &[dest, Value::Base64(b"new".to_vec())]).unwrap(),
                Value::Integer(1)
            );
            let backups = fs::read_dir(dir.join("tmp"))
                .unwrap()
                .filter(|e| e.as_ref().unwrap().file_name().to_string_lossy().ends_with('~'))
                .count();
            assert_eq!(backups, 1, "old content kept as a backup");
        });
    }

    #[test]
    fn open_append_builds_a_file() {
        with_ctx(&["/"], |ctx, dir| {
            let dest = Value::String("/srv/a/b.txt".into());
            assert_eq!(
                call(ctx, "open", &[dest.clone(), Value::Integer(0o600)]).unwrap(),
                dest
            );
            call(ctx, "append", &[dest.clone(), Value::Base64(b"one ".to_vec())]).unwrap();
            call(ctx, "append", &[dest, Value::Base64(b"two".to_vec())]).unwrap();
            let path = dir.join("srv/a/b.txt");
            assert_eq!(fs::read(&path).unwrap(), b"one two");
            assert_eq!(fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
        });
    }

    #[test]
    fn refuses_traversal_outside_dirs_and_symlinks() {
        with_ctx(&["/srv"], |ctx, dir| {
            let data = Value::Base64(b"x".to_vec());
            for bad in ["/srv/../etc/passwd", "srv/relative", "/etc/passwd", ""] {
                let e = call(ctx, "copyfile", &[Value::String(bad.into()), data.clone()]).unwrap_err();
                assert_eq!(e.kind, "ValueError", "{bad}: {e:?}");
            }
            fs::create_dir_all(dir.join("srv")).unwrap();
            let outside = tempfile::tempdir().unwrap();
            std::os::unix::fs::symlink(outside.path(), dir.join("srv/link")).unwrap();
            let e = call(
                ctx,
                "copyfile",
                &[Value::String("/srv/link/x".into()), data.clone()],
            )
            .unwrap_err();
            assert!(e.message.contains("symbolic link"), "{e:?}");
            assert!(call(ctx, "open", &[Value::String("/srv/link/y".into())]).is_err());
            assert_eq!(
                fs::read_dir(outside.path()).unwrap().count(),
                0,
                "nothing written through the link"
            );
            let e = call(
                ctx,
                "copyfile",
                &[
                    Value::String("/srv/m".into()),
                    data,
                    Value::String("77777".into()),
                ],
            )
            .unwrap_err();
            assert!(e.message.contains("07777"), "{e:?}");
        });
    }

    #[test]
    fn checksum_of_a_string_and_no_escape_by_link() {
        with_ctx(&["/"], |ctx, dir| {
            assert_eq!(
                call(ctx, "checksum", &[Value::String("abc".into())]).unwrap(),
                Value::String("a9993e364706816aba3e25717850c26c9cd0d89d".into())
            );
            std::os::unix::fs::symlink("/etc/hostname", dir.join("h")).unwrap();
            let via_link = call(ctx, "checksum", &[Value::String("/h".into())]).unwrap();
            assert_eq!(
                via_link,
                Value::String(sha1_hex(b"/h")),
                "a link leaving the root is not followed"
            );
        });
    }
}
