//! `func SPEC group OPTIONS`: Func's group management on `etc/func/groups`.
//! `--ag/--add_group G[;G]`, `--rg/--remove_group G[;G]`, `--la/--list_all`,
//! `--lg/--list_group G` (its members), `--ah/--add_host @G:HOST[;...]`,
//! `--rh/--remove_host @G:HOST[;...]`, `--lh/--list_hosts @G[:GLOB]`
//! (members with signed certificates). SPEC is required but not used, as in Func.

use overlord::groups::Groups;
use overlord::plan::{Plan, PlanError};

#[derive(Debug)]
pub enum Group {
    Add(Vec<String>),
    Remove(Vec<String>),
    ListAll,
    ListGroup(String),
    AddHosts(Vec<(String, String)>),
    RemoveHosts(Vec<(String, String)>),
    ListHosts(String),
}

fn host_pairs(arg: &str) -> Result<Vec<(String, String)>, PlanError> {
    arg.split(';')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (g, h) = p
                .strip_prefix('@')
                .and_then(|p| p.split_once(':'))
                .ok_or_else(|| PlanError::usage(format!("expected @GROUP:HOST, got {p:?}")))?;
            Ok((g.to_string(), h.to_string()))
        })
        .collect()
}

fn names(arg: &str) -> Vec<String> {
    arg.split(';')
        .map(|g| g.trim().trim_start_matches('@').to_string())
        .filter(|g| !g.is_empty())
        .collect()
}

impl Group {
    /// The one action of `func SPEC group` (clap made sure there is one).
    pub fn from_args(a: crate::cli::GroupArgs) -> Result<Self, PlanError> {
        Ok(if let Some(v) = a.add_group {
            Group::Add(names(&v))
        } else if let Some(v) = a.remove_group {
            Group::Remove(names(&v))
        } else if a.list_all {
            Group::ListAll
        } else if let Some(v) = a.list_group {
            Group::ListGroup(v.trim_start_matches('@').to_string())
        } else if let Some(v) = a.add_host {
            Group::AddHosts(host_pairs(&v)?)
        } else if let Some(v) = a.remove_host {
            Group::RemoveHosts(host_pairs(&v)?)
        } else if let Some(v) = a.list_hosts {
            Group::ListHosts(v)
        } else {
            return Err(PlanError::usage(
                "group needs an action: --ag, --rg, --la, --lg, --ah, --rh or --lh".into(),
            ));
        })
    }

    pub fn run(&self, plan: &Plan) -> Result<i32, PlanError> {
        let path = plan.root.groups_file();
        let mut groups = Groups::load(&path);
        let mut changed = false;
        let mut status = 0;
        let mut out = crate::display::output::Lines::new(plan.json, plan.out);
        match self {
            Group::ListAll => {
                let names: Vec<String> = groups.names().map(str::to_string).collect();
                out.field("groups", serde_json::json!(names));
                names.into_iter().for_each(|g| out.line(g));
            }
            Group::ListGroup(g) => match groups.hosts(g) {
                Some(hosts) => {
                    out.field("group", serde_json::json!(g));
                    out.field("hosts", serde_json::json!(hosts));
                    hosts.iter().for_each(|h| out.line(h.clone()));
                }
                None => {
                    overlord::errln!("no group {g}");
                    out.field("error", serde_json::json!(format!("no group {g}")));
                    status = 1;
                }
            },
            Group::ListHosts(spec) => {
                let names: Vec<String> = overlord::targets::resolve(&plan.root, spec, None)?
                    .into_iter()
                    .map(|t| t.name)
                    .collect();
                out.field("hosts", serde_json::json!(names));
                names.into_iter().for_each(|h| out.line(h));
            }
            Group::Add(names) => {
                for g in names {
                    if groups.add_group(g) {
                        changed = true;
                        out.line(format!("group {g} added"));
                    } else {
                        out.line(format!("group {g} exists"));
                    }
                }
            }
            Group::Remove(names) => {
                for g in names {
                    if groups.remove_group(g) {
                        changed = true;
                        out.line(format!("group {g} removed"));
                    } else {
                        overlord::errln!("no group {g}");
                        status = 1;
                    }
                }
            }
            Group::AddHosts(pairs) => {
                for (g, h) in pairs {
                    changed |= groups.add_hosts(g, std::slice::from_ref(h)) > 0;
                    out.line(format!("{h} in group {g}"));
                }
            }
            Group::RemoveHosts(pairs) => {
                for (g, h) in pairs {
                    if groups.remove_hosts(g, std::slice::from_ref(h)) > 0 {
                        changed = true;
                        out.line(format!("{h} removed from group {g}"));
                    } else {
                        overlord::errln!("{h} is not in group {g}");
                        status = 1;
                    }
                }
            }
        }
        out.field("changed", serde_json::json!(changed));
        if changed {
            save(&path, &groups.render()).map_err(|source| PlanError::File {
                path: path.clone(),
                source,
            })?;
        }
        Ok(out.finish(status))
    }
}

/// Write-temp + fsync + rename.
fn save(path: &std::path::Path, text: &str) -> std::io::Result<()> {
    use std::io::Write;
    let dir = path
        .parent()
        .ok_or_else(|| std::io::Error::other("no directory"))?;
    common::private::state_dir(dir, common::private::PUBLIC_DIR_MODE)?;
    let tmp = dir.join(format!(".groups.tmp{}", std::process::id()));
    let _ = std::fs::remove_file(&tmp);
    // 0644 whatever the umask, never through a link planted at the name.
    let mut f = common::private::options()
        .write(true)
        .create_new(true)
        .open(&tmp)?;
    use std::os::unix::fs::PermissionsExt;
    f.set_permissions(std::fs::Permissions::from_mode(0o644))?;
    f.write_all(text.as_bytes())?;
    f.sync_all()?;
    std::fs::rename(&tmp, path)
}
