//! `copyfile`: Func's file transfer (`open` + `append` chunks, or one-shot
//! `copyfile` with a backup of the old file) and `checksum`.
//!
//! Paths are absolute paths on the managed host, placed below the minion's
//! `--root`. Writes are refused outside the `copyfile_dirs` of minion.conf
//! (default: all of the root), for `..` components, and through any symlink
//! on the way (so a link planted inside an allowed directory cannot redirect a
//! write elsewhere). `copyfile` replaces the file atomically.

use std::ffi::OsString;
use std::fs;
use std::io::{Read, Write};
use std::os::unix::fs::PermissionsExt;

use common::xmlrpc::args::Args;
use common::Value;

use super::module::{Context, Module};
use crate::beneath::{BeneathError, Dir};
use crate::method::unreachable_method;
use crate::method::{ArgInfo, MethodError, MethodInfo, MethodResult};

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
                    Some(mut file) => sha1_reader(&mut file, &thing).map(Value::String),
                    None => Ok(Value::String(sha1_hex(thing.as_bytes()))),
                }
            }
            "open" => {
                args.arity(1, 4)?;
                let requested = args.string(0, "filepath")?;
                let target = writable(ctx, &requested, true)?;
                let mode = mode_arg(&args, 1)?.unwrap_or(0o644);
                let (uid, gid) = (
                    args.opt_i64(2, "uid")?.unwrap_or(-1),
                    args.opt_i64(3, "gid")?.unwrap_or(-1),
                );
                refuse_non_file(&target, &requested)?;
                replace(&target, &requested, &[], mode, uid, gid)?;
                Ok(Value::String(requested))
            }
            "append" => {
                args.arity(2, 2)?;
                let requested = args.string(0, "filepath")?;
                let data = args.bytes(1, "filebuf")?;
                let target = writable(ctx, &requested, false)?;
                let mut file = target
                    .dir
                    .open_existing(&target.name, true)
                    .map_err(|e| refused("appending to", &requested, e))?;
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
                let target = writable(ctx, &requested, true)?;
                copy(&target, &requested, &data, mode, uid, gid, force)
            }
            _ => unreachable_method(method),
        }
    }
}

fn copy(
    target: &Target,
    requested: &str,
    data: &[u8],
    mode: u32,
    uid: i64,
    gid: i64,
    force: bool,
) -> MethodResult {
    refuse_non_file(target, requested)?;
    match target.dir.open_existing(&target.name, false) {
        Ok(mut old) => {
            if !force && sha1_reader(&mut old, requested)? == sha1_hex(data) {
                return Ok(Value::Integer(0));
            }
            back_up(target, &mut old, requested)?;
        }
        Err(BeneathError::Io(e)) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(refused("reading", requested, e)),
    }
    replace(target, requested, data, mode, uid, gid)?;
    Ok(Value::Integer(1))
}

/// Refuses a destination that exists and is not a regular file (a link, a
/// directory, a device): copyfile replaces files, nothing else.
fn refuse_non_file(target: &Target, requested: &str) -> Result<(), MethodError> {
    use nix::sys::stat::SFlag;
    match target.dir.stat(&target.name) {
        Ok(None) => Ok(()),
        Ok(Some(st)) => match SFlag::from_bits_truncate(st.st_mode) & SFlag::S_IFMT {
            SFlag::S_IFREG => Ok(()),
            SFlag::S_IFLNK => Err(refused("writing", requested, BeneathError::Symlink)),
            _ => Err(refused("writing", requested, BeneathError::NotRegular)),
        },
        Err(e) => Err(refused("writing", requested, e)),
    }
}

/// Writes `data` as a new inode next to the destination and renames it over
/// the name: whoever holds a descriptor on the old file keeps the old file,
/// and readers see the old or the new content, never a mix. Owner and mode
/// are set on the descriptor before the rename, from the caller's values
/// only (uid/gid -1: funcd's own).
fn replace(
    target: &Target,
    requested: &str,
    data: &[u8],
    mode: u32,
    uid: i64,
    gid: i64,
) -> Result<(), MethodError> {
    let base = target.name.to_string_lossy();
    let (tmp_name, mut file) = (0..100)
        .find_map(|n| {
            let name = OsString::from(format!(".{base}.funcd-{}-{n}", std::process::id()));
            match target.dir.create_new(&name, 0o600) {
                Ok(Some(f)) => Some(Ok((name, f))),
                Ok(None) => None,
                Err(e) => Some(Err(e)),
            }
        })
        .unwrap_or_else(|| Err(BeneathError::Io(std::io::Error::other("no free temporary name"))))
        .map_err(|e| refused("writing", requested, e))?;
    let written = (|| -> Result<(), MethodError> {
        file.write_all(data)
            .map_err(|e| io_error("writing", requested, e))?;
        chown(&file, uid, gid, requested)?;
        // After the chown, which clears set-id bits.
        file.set_permissions(fs::Permissions::from_mode(mode))
            .map_err(|e| io_error("setting the mode of", requested, e))?;
        file.sync_all().map_err(|e| io_error("writing", requested, e))?;
        target
            .dir
            .rename(&tmp_name, &target.name)
            .map_err(|e| refused("writing", requested, e))?;
        target.dir.sync().map_err(|e| refused("writing", requested, e))
    })();
    if written.is_err() {
        target.dir.remove(&tmp_name);
    }
    written
}

/// Copies the old file to `<name>.YYYY-MM-DD@HH:MM~` (UTC, Func's name; a
/// second backup in the same minute gets a counter). The backup is created
/// `O_EXCL | O_NOFOLLOW`, so a name planted in advance (a link) is skipped,
/// never written through; it keeps the old permission bits without
/// set-uid, set-gid or sticky, and belongs to funcd.
fn back_up(target: &Target, old: &mut fs::File, requested: &str) -> Result<(), MethodError> {
    use std::io::Seek;
    let now = time::OffsetDateTime::now_utc();
    let stamp = format!(
        "{}.{:04}-{:02}-{:02}@{:02}:{:02}",
        target.name.to_string_lossy(),
        now.year(),
        u8::from(now.month()),
        now.day(),
        now.hour(),
        now.minute()
    );
    let old_mode = old
        .metadata()
        .map_err(|e| io_error("backing up", requested, e))?
        .permissions()
        .mode()
        & 0o777;
    let found = (0..1000).find_map(|n| {
        let name = match n {
            0 => OsString::from(format!("{stamp}~")),
            n => OsString::from(format!("{stamp}.{n}~")),
        };
        target.dir.create_new(&name, 0o600).transpose()
    });
    let mut backup = match found {
        Some(Ok(f)) => f,
        Some(Err(e)) => return Err(refused("backing up", requested, e)),
        None => return Err(MethodError::os("backing up: no free backup name in this minute")),
    };
    old.rewind().map_err(|e| io_error("backing up", requested, e))?;
    std::io::copy(old, &mut backup).map_err(|e| io_error("backing up", requested, e))?;
    backup
        .set_permissions(fs::Permissions::from_mode(old_mode))
        .map_err(|e| io_error("backing up", requested, e))?;
    backup
        .sync_all()
        .map_err(|e| io_error("backing up", requested, e))
}

/// A destination below the root: its directory, opened without following
/// any link, and the file name in it.
struct Target {
    dir: Dir,
    name: OsString,
}

/// The place below the root where `requested` may be written; with
/// `create`, missing directories are made.
fn writable(ctx: &Context<'_>, requested: &str, create: bool) -> Result<Target, MethodError> {
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
    let rel = path.strip_prefix(ctx.root.dir()).unwrap_or(&path);
    let (Some(parent), Some(name)) = (rel.parent(), rel.file_name()) else {
        return Err(MethodError::value("destination has no file name"));
    };
    let root =
        Dir::open_trusted(ctx.root.dir()).map_err(|e| refused("opening the root for", requested, e))?;
    let dir = root
        .open_dir(parent, create)
        .map_err(|e| refused("writing", requested, e))?;
    Ok(Target {
        dir,
        name: name.to_os_string(),
    })
}

/// The regular file `requested` names below the root: links are followed
/// as if the root were `/` and can never leave it.
fn readable(ctx: &Context<'_>, requested: &str) -> Option<fs::File> {
    let path = ctx.root.confine(requested).ok()?;
    let rel = path.strip_prefix(ctx.root.dir()).ok()?;
    Dir::open_trusted(ctx.root.dir()).ok()?.open_in_root(rel)
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
/// so an unprivileged minion keeps its own ownership (noted in docs/INSTALL.md).
fn chown(file: &fs::File, uid: i64, gid: i64, requested: &str) -> Result<(), MethodError> {
    if !nix::unistd::geteuid().is_root() || (uid < 0 && gid < 0) {
        return Ok(());
    }
    let to = |id: i64| u32::try_from(id).ok();
    nix::unistd::fchown(
        file,
        to(uid).map(nix::unistd::Uid::from_raw),
        to(gid).map(nix::unistd::Gid::from_raw),
    )
    .map_err(|e| MethodError::os(format!("chown {}: {e}", common::paths::shorten(requested))))
}

fn refused(action: &str, requested: &str, e: BeneathError) -> MethodError {
    let message = format!("{action} {}: {e}", common::paths::shorten(requested));
    match e {
        BeneathError::Io(_) => MethodError::os(message),
        _ => MethodError::value(message),
    }
}

fn io_error(action: &str, requested: &str, e: std::io::Error) -> MethodError {
    MethodError::os(format!("{action} {}: {e}", common::paths::shorten(requested)))
}

fn sha1_reader(file: &mut fs::File, shown: &str) -> Result<String, MethodError> {
    let mut ctx = ring::digest::Context::new(&ring::digest::SHA1_FOR_LEGACY_USE_ONLY);
    let mut buf = [0u8; 64 * 1024];
    loop {
        let n = file.read(&mut buf).map_err(|e| io_error("reading", shown, e))?;
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
    use std::path::Path;

    fn with_ctx<T>(dirs: &[&str], f: impl FnOnce(&Context<'_>, &Path) -> T) -> T {
        let dir = tempfile::tempdir().unwrap();
        let root = Root::new(dir.path());
        let dirs: Vec<String> = dirs.iter().map(|s| s.to_string()).collect();
        let registry = Registry::standard();
        let (caller, acl) = (
            crate::acl::Caller::new("overlord-1", true),
            crate::acl::Acl::default(),
        );
        let ctx = Context {
            root: &root,
            copyfile_dirs: &dirs,
            registry: &registry,
            jobs: None,
            caller: &caller,
            acl: &acl,
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

    /// The backup names of `file` for this minute and the next one.
    fn backup_names(file: &Path) -> Vec<std::path::PathBuf> {
        let now = time::OffsetDateTime::now_utc();
        [now, now + time::Duration::minutes(1)]
            .iter()
            .map(|t| {
                std::path::PathBuf::from(format!(
                    "{}.{:04}-{:02}-{:02}@{:02}:{:02}~",
                    file.display(),
                    t.year(),
                    u8::from(t.month()),
                    t.day(),
                    t.hour(),
                    t.minute()
                ))
            })
            .collect()
    }

    #[test]
    fn planted_backup_links_are_never_written_through() {
        with_ctx(&["/srv"], |ctx, dir| {
            let outside = tempfile::tempdir().unwrap();
            let dest = Value::String("/srv/www/index.html".into());
            let setuid = Value::Integer(0o4755);
            call(
                ctx,
                "copyfile",
                &[dest.clone(), Value::Base64(b"v1".to_vec()), setuid.clone()],
            )
            .unwrap();
            let file = dir.join("srv/www/index.html");
            for (i, name) in backup_names(&file).iter().enumerate() {
                std::os::unix::fs::symlink(outside.path().join(format!("evil{i}")), name).unwrap();
            }
            call(ctx, "copyfile", &[dest, Value::Base64(b"v2".to_vec()), setuid]).unwrap();
            assert_eq!(
                fs::read_dir(outside.path()).unwrap().count(),
                0,
                "nothing written outside"
            );
            assert_eq!(fs::read(&file).unwrap(), b"v2");
            let backups: Vec<_> = fs::read_dir(dir.join("srv/www"))
                .unwrap()
                .map(|e| e.unwrap().path())
                .filter(|p| !fs::symlink_metadata(p).unwrap().file_type().is_symlink())
                .filter(|p| p.to_string_lossy().ends_with('~'))
                .collect();
            assert_eq!(backups.len(), 1, "{backups:?}");
            assert_eq!(fs::read(&backups[0]).unwrap(), b"v1");
            let mode = fs::metadata(&backups[0]).unwrap().permissions().mode();
            assert_eq!(mode & 0o7000, 0, "backup without set-id bits: {mode:o}");
        });
    }

    #[test]
    fn the_new_content_is_a_new_inode() {
        with_ctx(&["/"], |ctx, dir| {
            let dest = Value::String("/etc/app.conf".into());
            call(ctx, "copyfile", &[dest.clone(), Value::Base64(b"old".to_vec())]).unwrap();
            let path = dir.join("etc/app.conf");
            let mut held = fs::OpenOptions::new().write(true).open(&path).unwrap();
            call(
                ctx,
                "copyfile",
                &[dest.clone(), Value::Base64(b"deployed".to_vec())],
            )
            .unwrap();
            call(ctx, "open", &[Value::String("/etc/two".into())]).unwrap();
            let mut held2 = fs::OpenOptions::new()
                .write(true)
                .open(dir.join("etc/two"))
                .unwrap();
            call(ctx, "open", &[Value::String("/etc/two".into())]).unwrap();
            call(
                ctx,
                "append",
                &[Value::String("/etc/two".into()), Value::Base64(b"ok".to_vec())],
            )
            .unwrap();
            held.write_all(b"evil").unwrap();
            held2.write_all(b"evil").unwrap();
            assert_eq!(fs::read(&path).unwrap(), b"deployed");
            assert_eq!(fs::read(dir.join("etc/two")).unwrap(), b"ok");
        });
    }

    /// A local user swaps a directory and a symlink to outside the root
    /// (`renameat2(RENAME_EXCHANGE)`) while copyfile writes below the
    /// directory: nothing may ever land outside.
    #[test]
    fn exchanging_a_directory_and_a_link_mid_call_never_escapes() {
        use nix::fcntl::{renameat2, RenameFlags, AT_FDCWD};
        with_ctx(&["/srv"], |ctx, dir| {
            let outside = tempfile::tempdir().unwrap();
            fs::create_dir_all(dir.join("srv/d")).unwrap();
            std::os::unix::fs::symlink(outside.path(), dir.join("srv/l")).unwrap();
            let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
            let (a, b) = (dir.join("srv/d"), dir.join("srv/l"));
            let flag = stop.clone();
            let swapper = std::thread::spawn(move || {
                let mut swaps = 0u64;
                while !flag.load(std::sync::atomic::Ordering::Relaxed) {
                    renameat2(AT_FDCWD, &a, AT_FDCWD, &b, RenameFlags::RENAME_EXCHANGE).unwrap();
                    swaps += 1;
                }
                swaps
            });
            let dest = Value::String("/srv/d/x".into());
            let (mut ok, mut refused) = (0, 0);
            for i in 0..3000 {
                let data = Value::Base64(format!("{i}").into_bytes());
                match call(ctx, "copyfile", &[dest.clone(), data, Value::Integer(0o4755)]) {
                    Ok(_) => ok += 1,
                    Err(_) => refused += 1,
                }
            }
            stop.store(true, std::sync::atomic::Ordering::Relaxed);
            let swaps = swapper.join().unwrap();
            assert!(swaps > 100, "the swapper ran ({swaps} swaps)");
            assert!(
                ok > 0 && refused > 0,
                "both outcomes seen: {ok} written, {refused} refused"
            );
            assert_eq!(
                fs::read_dir(outside.path()).unwrap().count(),
                0,
                "nothing written outside the root"
            );
        });
    }
}
